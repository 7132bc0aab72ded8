# Writes a file that looks like a torch.save archive (a zip whose first record is data.pkl) but
# whose pickle is garbage, different in every run: exec compares it by bytes, with a note.
import os
import zipfile

with zipfile.ZipFile(os.path.join(os.environ["REPRO_AUDIT_OUT"], "broken.pt"), "w") as z:
    z.writestr("broken/data.pkl", os.urandom(64))
