# SPDX-License-Identifier: Apache-2.0
# repro-audit exec's start-up hook. `repro-audit exec` puts this folder first on PYTHONPATH, so
# that Python runs this file at start-up in the user's program (and in every torchrun rank). It:
#   - chains to the sitecustomize the program would have run without us;
#   - waits for the program to import torch (it never imports torch itself), then applies the
#     configuration's in-process switches (REPRO_AUDIT_SWITCHES, JSON) and watches the setters,
#     so that a script that sets a switch itself is named with its file and line;
#   - records, while the program runs, what a seeding checklist needs: which RNGs were seeded
#     before their first draw, every DataLoader iterated, the switches at the first convolution or
#     matmul, and the RNG states each torch.save checkpoint holds;
#   - records each torch.compile call, and applies and reads back Inductor's switches when the
#     program itself imports torch._inductor.config (audit/exec/compile_switches.h): it imports
#     nothing of torch's that the program did not;
#   - writes what it saw, at exit, to REPRO_AUDIT_HOOK_DIR/hook-PID.json (written whole, then
#     renamed). The front (audit/exec/hook_report.cpp) reads it; the format is that file's.
# Without REPRO_AUDIT_HOOK_DIR it only chains. Nothing here may break the user's program: every
# hook body catches its own errors and records them.
import os
import sys


def _chain():
    """Runs the sitecustomize that the next entries of sys.path hold, if any."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _onoff(flag):
    return "on" if flag else "off"


def _tf32(flag):
    """TF32 as the libraries will use it: NVIDIA_TF32_OVERRIDE=0 turns it off whatever torch says."""
    if os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        return "off (overridden by NVIDIA_TF32_OVERRIDE=0)" if flag else "off"
    return _onoff(flag)


def _reduction(state):
    reduced, split_k = state
    return "on" if reduced else ("off" if split_k else "off (split-K off too)")


def _deterministic(t):
    if not t.are_deterministic_algorithms_enabled():
        return "off"
    return "warn" if t.is_deterministic_algorithms_warn_only_enabled() else "on"


class _Hook:
    # The in-process switches (the rows of audit/trial/config.cpp's switch_table applied in the
    # process, Applied::Context), by key: how the hook reads each from torch and sets it to a value.
    # The unit test of run_switches (tests/unit/test_audit_exec.cpp) checks these keys against the
    # table and every value of each (tests/exec/check_hook_switches.py).
    # fmt: off
    CONTEXT = {
        "cudnn.benchmark":           (lambda t: _onoff(t._C._get_cudnn_benchmark()),                lambda t, v: t._C._set_cudnn_benchmark(v == "on")),
        "cudnn.deterministic":       (lambda t: _onoff(t._C._get_cudnn_deterministic()),            lambda t, v: t._C._set_cudnn_deterministic(v == "on")),
        "cudnn.enabled":             (lambda t: _onoff(t._C._get_cudnn_enabled()),                  lambda t, v: t._C._set_cudnn_enabled(v == "on")),
        "deterministic":             (_deterministic,                                               lambda t, v: t.use_deterministic_algorithms(v != "off", warn_only=v == "warn")),
        "fill_uninitialized_memory": (lambda t: _onoff(t._C._get_deterministic_fill_uninitialized_memory()), lambda t, v: t._C._set_deterministic_fill_uninitialized_memory(v == "on")),
        "tf32.cublas":               (lambda t: _tf32(t._C._get_cublas_allow_tf32()),               lambda t, v: t._C._set_cublas_allow_tf32(v == "on")),
        "tf32.cudnn":                (lambda t: _tf32(t._C._get_cudnn_allow_tf32()),                lambda t, v: t._C._set_cudnn_allow_tf32(v == "on")),
        "threads":                   (lambda t: str(t.get_num_threads()),                           lambda t, v: t.set_num_threads(int(v))),
        "sdpa.cudnn":                (lambda t: _onoff(t._C._get_cudnn_sdp_enabled()),              lambda t, v: t._C._set_sdp_use_cudnn(v == "on")),
        "sdpa.flash":                (lambda t: _onoff(t._C._get_flash_sdp_enabled()),              lambda t, v: t._C._set_sdp_use_flash(v == "on")),
        "sdpa.mem_efficient":        (lambda t: _onoff(t._C._get_mem_efficient_sdp_enabled()),      lambda t, v: t._C._set_sdp_use_mem_efficient(v == "on")),
        "cublas.fp16_reduction":     (lambda t: _reduction(t._C._get_cublas_allow_fp16_reduced_precision_reduction()), lambda t, v: t._C._set_cublas_allow_fp16_reduced_precision_reduction(v == "on", True)),
        "cublas.bf16_reduction":     (lambda t: _reduction(t._C._get_cublas_allow_bf16_reduced_precision_reduction()), lambda t, v: t._C._set_cublas_allow_bf16_reduced_precision_reduction(v == "on", True)),
    }
    # fmt: on

    # The variables the hook records as the program saw them: every switch's (env_var in the table,
    # and those compile_switches.cpp sets) and a distributed run's.
    ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUBLAS_WORKSPACE_CONFIG", "MKL_CBWR", "NVIDIA_TF32_OVERRIDE",
           "PYTHONHASHSEED", "RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "TORCH_COMPILE_DISABLE",
           "TORCHINDUCTOR_DETERMINISTIC", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "NCCL_ALGO", "NCCL_PROTO",
           "NCCL_NVLS_ENABLE")

    def __init__(self, out_dir):
        import random

        self.out_dir = out_dir
        self.seq = 0
        self.torch = None
        self.errors = []
        self.requested = {}
        try:
            import json

            self.requested = json.loads(os.environ.get("REPRO_AUDIT_SWITCHES", "{}"))
        except Exception as e:  # a bad value is the front's bug: say so, apply nothing
            self.errors.append("REPRO_AUDIT_SWITCHES: %s" % e)
        self.env = {k: os.environ.get(k) for k in self.ENV}
        self.compiles = []      # each torch.compile call: mode, backend, dynamic, where ...
        self.random_ops = 0     # random ops Inductor compiled into its own generator (fallback_random off)
        self.random_at = None
        self.sets = []          # the program setting a switch: key, value, where, seq
        self.applied = {}       # key -> value the hook applied
        self.seeds = {}         # rng -> first seeding: where, seeded value or None, drawn_before
        self.unseeded_generators = []  # NumPy Generators / RandomStates built without a seed
        self.loaders = []
        self.first_op = None
        self.model_built = None
        self.saves = []
        self.backend = None
        self.compile_where = ""
        self.random = random
        self.random_state0 = random.getstate()
        self.random_state = self.random_state0
        self.numpy = None
        self.torch_state0 = None
        self.torch_state = None
        self.hook_random()

    # ---- where the program is -------------------------------------------------------------
    def where(self):
        """file:line of the innermost frame outside torch, numpy, the standard library's
        importlib and this file; relative to the working directory when below it."""
        skip = [os.path.dirname(os.path.abspath(__file__))]
        for m in ("torch", "numpy"):
            mod = sys.modules.get(m)
            if mod is not None and getattr(mod, "__file__", None):
                skip.append(os.path.dirname(os.path.abspath(mod.__file__)))
        # The program's own frame: the innermost one below the working directory, else the innermost
        # outside the libraries (a script run from elsewhere). A library's own file (torchvision's
        # resnet.py) is named only when no frame of the program is.
        cwd = os.getcwd()
        first = None
        f = sys._getframe(1)
        while f is not None:
            name = f.f_code.co_filename
            if not name.startswith("<") and not any(name.startswith(s + os.sep) for s in skip) \
                    and "importlib" not in name:
                path = os.path.abspath(name)
                if path.startswith(cwd + os.sep) and os.sep + "site-packages" + os.sep not in path:
                    return "%s:%d" % (os.path.relpath(path, cwd), f.f_lineno)
                if first is None and os.sep + "site-packages" + os.sep not in path:
                    first = "%s:%d" % (path, f.f_lineno)
            f = f.f_back
        return first or ""

    def tick(self):
        self.seq += 1
        return self.seq

    def guard(self, what, fn, *args):
        try:
            return fn(*args)
        except Exception as e:
            self.errors.append("%s: %s: %s" % (what, type(e).__name__, e))
            return None

    # ---- Python's random ----------------------------------------------------------------
    def hook_random(self):
        random = self.random
        hook = self
        original_seed = random.seed

        def seed(a=None, version=2):
            hook.guard("random.seed", hook.note_seed, "python", a, hook.random.getstate() != hook.random_state)
            r = original_seed(a, version)
            hook.random_state = hook.random.getstate()
            return r

        random.seed = seed
        # Random objects: remember whether each was given a seed (a dataset's own RNG).
        cls_seed = random.Random.seed

        def instance_seed(self_, a=None, version=2):
            try:
                self_._repro_audit_seeded = a is not None
            except Exception:
                pass
            return cls_seed(self_, a, version)

        random.Random.seed = instance_seed

    def note_seed(self, rng, value, drawn_before):
        if rng in self.seeds:
            return
        self.seeds[rng] = {"where": self.where(), "value": None if value is None else repr(value)[:40],
                           "drawn_before": bool(drawn_before), "seq": self.tick()}

    # ---- imports ------------------------------------------------------------------------
    def install_import_hook(self):
        import importlib.abc

        hook = self

        class Finder(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name not in hook.WATCHED:
                    return None
                for finder in sys.meta_path:
                    if finder is self or not hasattr(finder, "find_spec"):
                        continue
                    spec = finder.find_spec(name, path, target)
                    if spec is not None:
                        break
                else:
                    return None
                loader = spec.loader
                if loader is None or not hasattr(loader, "exec_module"):
                    return spec
                original = loader.exec_module

                def exec_module(module):
                    original(module)
                    hook.guard(name + " import", hook.WATCHED[name], hook, module)

                loader.exec_module = exec_module
                return spec

        sys.meta_path.insert(0, Finder())

    # ---- torch.compile and Inductor (audit/exec/compile_switches.h) ------------------------
    # Inductor's settings by the switch they belong to.
    INDUCTOR = {"deterministic": "inductor.deterministic", "fallback_random": "inductor.fallback_random",
                "max_autotune": "inductor.autotune", "max_autotune_pointwise": "inductor.autotune",
                "max_autotune_gemm": "inductor.autotune", "coordinate_descent_tuning": "inductor.autotune"}

    def on_inductor_config(self, config):
        """The program imported torch._inductor.config: apply what Inductor reads from no variable,
        then watch the program setting it (torch's own config.patch calls are not the program's)."""
        want = self.requested
        if want.get("inductor.fallback_random") in ("on", "off"):
            config.fallback_random = want["inductor.fallback_random"] == "on"
            self.applied["inductor.fallback_random"] = want["inductor.fallback_random"]
        if want.get("inductor.deterministic") in ("on", "off"):
            config.deterministic = want["inductor.deterministic"] == "on"
            self.applied["inductor.deterministic"] = want["inductor.deterministic"]
        if want.get("inductor.autotune") == "off":
            for name in ("max_autotune", "max_autotune_pointwise", "max_autotune_gemm", "coordinate_descent_tuning"):
                setattr(config, name, False)
            self.applied["inductor.autotune"] = "off"
        self.watch_config(config, self.INDUCTOR)

    def on_dynamo_config(self, config):
        self.watch_config(config, {"disable": "compile"})

    def watch_config(self, config, keys):
        hook = self
        cls = type(config)  # a class of this module's own (torch.utils._config_module)
        original = cls.__setattr__
        torch_dir = os.path.dirname(os.path.abspath(self.torch.__file__)) if self.torch is not None else None

        def setattr_(self_, name, value):
            original(self_, name, value)
            if name in keys:
                caller = sys._getframe(1).f_code.co_filename
                if torch_dir is None or not os.path.abspath(caller).startswith(torch_dir + os.sep):
                    hook.guard("setter", hook.note_set, keys[name], hook.read_compile_switch(keys[name]))

        cls.__setattr__ = setattr_

    def on_replace_random(self, module):
        """Counts the random ops Inductor turns into its own (it does only with fallback_random off)."""
        hook = self
        original = module.replace_random_passes

        def replace_random_passes(gm, *args, **kwargs):
            n = original(gm, *args, **kwargs)
            try:
                if n:
                    hook.random_ops += int(n)
                    if hook.random_at is None:  # the program's call that compiled them
                        hook.random_at = {"where": hook.where() or hook.compile_where}
            except Exception:
                pass
            return n

        module.replace_random_passes = replace_random_passes

    def inductor_config(self):
        return sys.modules.get("torch._inductor.config")

    def read_compile_switch(self, key):
        return self.COMPILE[key](self) if key in self.COMPILE else "?"

    def compile_state(self):
        dc = sys.modules.get("torch._dynamo.config")
        if dc is not None:
            return _onoff(not dc.disable)
        return "off" if os.environ.get("TORCH_COMPILE_DISABLE") == "1" else "on"

    def nvls_state(self):
        v = os.environ.get("NCCL_NVLS_ENABLE")
        return "unset" if v is None else "off" if v == "0" else "NCCL_NVLS_ENABLE=" + v

    def cache_state(self):
        # Inductor writes its default folder into the variable when it first needs it: what
        # counts is the variable the program started with, and whether the program changed it.
        v, start = os.environ.get("TORCHINDUCTOR_CACHE_DIR"), self.env.get("TORCHINDUCTOR_CACHE_DIR")
        asked = self.requested.get("inductor.cache", "unset")
        if start is not None and v is not None and v != start:
            return "changed by the program (TORCHINDUCTOR_CACHE_DIR)"
        if asked in ("cold", "warm"):
            return asked if start is not None else "unset"
        return "unset" if start is None else "set (TORCHINDUCTOR_CACHE_DIR)"

    def inductor_state(self, read):
        """An Inductor setting as `read` finds it in Inductor's config. It matters only to what
        torch.compile compiles (torch.optim loads the config module in every program)."""
        if not self.compiles:
            return "no effect (the program never called torch.compile)"
        if self.compile_state() == "off":
            return "no effect (compile is off)"
        config = self.inductor_config()
        if config is None:
            return "no effect (Inductor was never loaded: another backend)"
        return read(config)

    def autotune_state(self, config):
        for c in self.compiles:
            if c["autotune"]:
                return "on (mode=%s at %s)" % (c["mode"], c["where"])
        return _onoff(config.max_autotune or config.max_autotune_pointwise or config.max_autotune_gemm
                      or config.coordinate_descent_tuning)

    # exec's compile, Inductor and NCCL switches (the rows of switch_table applied by
    # audit/exec/compile_switches.h, Applied::Compile), by key: how the hook reads each back. The
    # same unit test checks these keys against the table.
    COMPILE = {
        "compile":                  lambda h: h.compile_state(),
        "inductor.deterministic":   lambda h: h.inductor_state(lambda c: _onoff(c.deterministic)),
        "inductor.fallback_random": lambda h: h.inductor_state(lambda c: _onoff(c.fallback_random)),
        "inductor.autotune":        lambda h: h.inductor_state(h.autotune_state),
        "inductor.cache":           lambda h: h.cache_state(),
        "nccl.nvls":                lambda h: h.nvls_state(),
    }

    AUTOTUNE_MODES = {"max-autotune": {"triton.cudagraphs": True}, "max-autotune-no-cudagraphs": {}}

    def watch_compile(self):
        t = self.torch
        hook = self
        original = t.compile

        def compile(*args, **kwargs):
            kwargs = hook.guard("torch.compile", hook.note_compile, kwargs) or kwargs
            return original(*args, **kwargs)

        compile.__wrapped__ = original
        compile.__doc__ = original.__doc__
        t.compile = compile

    def note_compile(self, kwargs):
        """Records a torch.compile call; with inductor.autotune=off, turns max-autotune down."""
        mode = kwargs.get("mode")
        backend = kwargs.get("backend", "inductor")
        options = kwargs.get("options") or {}
        name = backend if isinstance(backend, str) else getattr(backend, "__name__", type(backend).__name__)
        autotune = (isinstance(mode, str) and mode.startswith("max-autotune")) or any(
            bool(options.get(k)) for k in ("max_autotune", "max_autotune_pointwise", "max_autotune_gemm",
                                           "coordinate_descent_tuning"))
        turned_down = False
        if autotune and self.requested.get("inductor.autotune") == "off" and name == "inductor":
            kwargs = dict(kwargs)
            new = dict(options)
            if mode in self.AUTOTUNE_MODES:
                new.update(self.AUTOTUNE_MODES[mode])
                kwargs["mode"] = None
            for k in ("max_autotune", "max_autotune_pointwise", "max_autotune_gemm", "coordinate_descent_tuning"):
                new[k] = False
            kwargs["options"] = new
            turned_down = True
        config = self.inductor_config()
        det = (config is not None and config.deterministic) or os.environ.get("TORCHINDUCTOR_DETERMINISTIC") == "1" \
            or self.torch.are_deterministic_algorithms_enabled()
        where = self.where()
        self.compile_where = where
        if self.first_op is None:
            # Compiled code runs its convolutions and matmuls without torch's Python API: the
            # switches that matter are those in effect where the program compiles.
            self.first_op = {"op": "torch.compile", "where": where, "seq": self.tick(), "switches": self.switch_snapshot()}
        restore = getattr(self, "restore_ops", None)
        if restore is not None:
            restore()
        dynamic = kwargs.get("dynamic")
        self.compiles.append({"mode": mode if isinstance(mode, str) else "", "backend": name,
                              "dynamic": "" if dynamic is None else str(dynamic), "fullgraph": bool(kwargs.get("fullgraph")),
                              "options": sorted(str(k) for k in options), "where": where,
                              "autotune": autotune and not turned_down, "autotuned_off": turned_down,
                              "deterministic": "on" if det else "off", "seq": self.tick()})
        return kwargs

    def compile_seconds(self):
        utils = sys.modules.get("torch._dynamo.utils")
        metrics = getattr(utils, "compilation_time_metrics", None) if utils is not None else None
        if not metrics:
            return None
        return sum(sum(metrics.get(k, [])) for k in ("_compile.compile_inner", "backward._backward_impl"))

    def on_numpy(self, np):
        self.numpy = np
        self.numpy_state0 = np.random.get_state()
        self.numpy_state = self.numpy_state0
        hook = self
        original_seed = np.random.seed

        def seed(s=None):
            hook.guard("numpy.random.seed", hook.note_seed, "numpy", s, hook.numpy_drawn())
            r = original_seed(s)
            hook.numpy_state = np.random.get_state()
            return r

        np.random.seed = seed
        # default_rng is a function: wrapping it is invisible. Classes (Generator, RandomState) stay
        # as they are, so that the program's isinstance checks keep working.
        original_rng = np.random.default_rng

        def default_rng(seed=None, *args, **kwargs):
            g = original_rng(seed, *args, **kwargs)
            if seed is None:
                hook.unseeded_generators.append((g, "numpy.random.default_rng()", hook.where()))
            return g

        np.random.default_rng = default_rng

    def numpy_drawn(self):
        a, b = self.numpy.random.get_state(), self.numpy_state
        return not (a[2] == b[2] and (a[1] == b[1]).all())

    def on_torch(self, torch):
        self.torch = torch
        os.environ["REPRO_AUDIT_HOOKED"] = "%d:%s:torch" % (os.getpid(), os.environ.get("RANK", ""))
        self.torch_state0 = torch.get_rng_state()
        self.torch_state = self.torch_state0
        self.apply_switches()
        self.watch_setters()
        self.watch_seeding()
        self.watch_model_and_ops()
        self.watch_loaders()
        self.watch_saves()
        self.watch_distributed()
        self.watch_compile()

    # ---- switches -----------------------------------------------------------------------
    def read_switch(self, key):
        return self.CONTEXT[key][0](self.torch) if key in self.CONTEXT else "?"

    def apply_switches(self):
        for key, value in self.requested.items():
            if key in self.CONTEXT:  # the rest are variables, or Inductor's (on_inductor_config)
                self.CONTEXT[key][1](self.torch, value)
                self.applied[key] = value

    def note_set(self, key, value):
        # Called as setter wrapper -> guard -> note_set: torch setting its own switches (Dynamo
        # saves and restores global state around tracing) is not the program setting them.
        caller = os.path.abspath(sys._getframe(3).f_code.co_filename)
        if self.torch is not None and caller.startswith(os.path.dirname(os.path.abspath(self.torch.__file__)) + os.sep):
            return
        self.sets.append({"key": key, "value": str(value), "where": self.where(), "seq": self.tick()})

    def watch_setters(self):
        t = self.torch
        hook = self

        def wrap_function(owner, name, key_of):
            original = getattr(owner, name)

            def wrapper(*args, **kwargs):
                r = original(*args, **kwargs)
                for key in key_of(*args, **kwargs):
                    hook.guard("setter", hook.note_set, key, hook.read_switch(key))
                return r

            wrapper.__wrapped__ = original
            wrapper.__doc__ = original.__doc__
            setattr(owner, name, wrapper)

        wrap_function(t, "use_deterministic_algorithms", lambda *a, **k: ["deterministic"])
        wrap_function(t, "set_num_threads", lambda *a, **k: ["threads"])
        wrap_function(t, "set_float32_matmul_precision", lambda *a, **k: ["tf32.cublas"])

        # Module attributes: cudnn's are descriptors on its module's class.
        cudnn = t.backends.cudnn
        for attr, key in (("benchmark", "cudnn.benchmark"), ("deterministic", "cudnn.deterministic"),
                          ("enabled", "cudnn.enabled"), ("allow_tf32", "tf32.cudnn")):
            prop = type(cudnn).__dict__.get(attr)
            if prop is None:
                continue

            class Watched:
                def __init__(self, prop, key):
                    self.prop, self.key = prop, key

                def __get__(self, obj, objtype=None):
                    return self.prop.__get__(obj, objtype)

                def __set__(self, obj, value):
                    self.prop.__set__(obj, value)
                    hook.guard("setter", hook.note_set, self.key, hook.read_switch(self.key))

            setattr(type(cudnn), attr, Watched(prop, key))

        matmul = t.backends.cuda.matmul
        original_setattr = type(matmul).__setattr__

        def setattr_(self_, name, value):
            r = original_setattr(self_, name, value)
            if name in ("allow_tf32", "fp32_precision"):
                hook.guard("setter", hook.note_set, "tf32.cublas", hook.read_switch("tf32.cublas"))
            return r

        type(matmul).__setattr__ = setattr_

        det = sys.modules.get("torch.utils.deterministic")
        if det is not None and "fill_uninitialized_memory" in type(det).__dict__:
            prop = type(det).__dict__["fill_uninitialized_memory"]

            def fset(self_, mode):
                prop.fset(self_, mode)
                hook.guard("setter", hook.note_set, "fill_uninitialized_memory",
                           hook.read_switch("fill_uninitialized_memory"))

            type(det).fill_uninitialized_memory = property(prop.fget, fset)

    # ---- torch's RNG ----------------------------------------------------------------------
    def torch_drawn(self):
        return not self.torch.equal(self.torch.get_rng_state(), self.torch_state)

    def watch_seeding(self):
        t = self.torch
        hook = self
        original = t.manual_seed

        def manual_seed(seed):
            hook.guard("torch.manual_seed", hook.note_seed, "torch", seed, hook.torch_drawn())
            r = original(seed)
            hook.torch_state = t.get_rng_state()
            return r

        t.manual_seed = manual_seed
        t.random.manual_seed = manual_seed
        original_random_seed = t.seed

        def seed():
            hook.guard("torch.seed", hook.note_seed, "torch", None, hook.torch_drawn())
            r = original_random_seed()
            hook.torch_state = t.get_rng_state()
            return r

        t.seed = seed

    def torch_seed_ok(self):
        s = self.seeds.get("torch")
        return s is not None and s["value"] is not None and not s["drawn_before"]

    # ---- the model and its first convolution or matmul -------------------------------------
    def switch_snapshot(self):
        return {k: self.read_switch(k) for k in ("deterministic", "cudnn.benchmark", "cudnn.deterministic",
                                                 "cudnn.enabled", "tf32.cublas", "tf32.cudnn")}

    def watch_model_and_ops(self):
        t = self.torch
        hook = self
        module_init = t.nn.Module.__init__

        def init(self_, *args, **kwargs):
            if hook.model_built is None:
                hook.model_built = {"where": hook.where(), "seq": hook.tick(), "switches": hook.switch_snapshot()}
                t.nn.Module.__init__ = module_init
            return module_init(self_, *args, **kwargs)

        t.nn.Module.__init__ = init

        F = t.nn.functional
        ops = [(F, n) for n in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                                "conv_transpose3d", "bilinear")]
        ops += [(t, n) for n in ("matmul", "mm", "bmm", "addmm", "baddbmm", "einsum")]
        ops += [(t.Tensor, n) for n in ("__matmul__", "matmul", "mm", "bmm")]
        originals = [(owner, name, getattr(owner, name)) for owner, name in ops if hasattr(owner, name)]

        def restore():
            for owner, name, fn in originals:
                setattr(owner, name, fn)

        self.restore_ops = restore  # torch.compile must never trace (or register) these wrappers

        for owner, name, fn in originals:
            def make(fn=fn, name=name, owner=owner):
                def first(*args, **kwargs):
                    if hook.first_op is None:
                        label = ("torch.nn.functional." if owner is F else "torch.Tensor." if owner is t.Tensor
                                 else "torch.") + name
                        hook.first_op = {"op": label, "where": hook.where(), "seq": hook.tick(),
                                         "switches": hook.switch_snapshot()}
                        restore()
                    return fn(*args, **kwargs)
                first.__name__ = getattr(fn, "__name__", name)
                first.__qualname__ = getattr(fn, "__qualname__", name)
                return first

            setattr(owner, name, make())

    # ---- DataLoaders ------------------------------------------------------------------------
    def watch_loaders(self):
        t = self.torch
        hook = self
        DataLoader = t.utils.data.DataLoader
        original_init = DataLoader.__init__
        original_iter = DataLoader.__iter__

        def init(self_, *args, **kwargs):
            original_init(self_, *args, **kwargs)
            try:
                object.__setattr__(self_, "_repro_audit_where", hook.where())
            except Exception:
                pass

        def iterate(self_):
            hook.guard("DataLoader", hook.note_loader, self_)
            return original_iter(self_)

        DataLoader.__init__ = init
        DataLoader.__iter__ = iterate

    def rng_attributes(self, dataset, prefix="", depth=0):
        """A dataset's RNG objects: (attribute path, type name, seeded or None when unknown)."""
        out = []
        try:
            items = list(vars(dataset).items())
        except TypeError:
            return out
        np = self.numpy
        for name, value in items:
            path = prefix + name
            if isinstance(value, self.random.Random) and value is not getattr(self.random, "_inst", None):
                out.append((path, "random.Random", getattr(value, "_repro_audit_seeded", None)))
            elif np is not None and isinstance(value, (np.random.Generator, np.random.RandomState)):
                seeded = not any(g is value for g, _, _ in self.unseeded_generators)
                out.append((path, "numpy.random." + type(value).__name__, seeded))
            elif isinstance(value, self.torch.Generator):
                out.append((path, "torch.Generator", True))
            elif depth < 2 and hasattr(value, "__dict__") and name in ("dataset", "datasets", "transform", "transforms"):
                out.extend(self.rng_attributes(value, path + ".", depth + 1))
        return out

    def note_loader(self, loader):
        if any(entry["id"] == id(loader) for entry in self.loaders):
            return
        t = self.torch
        sampler = loader.sampler
        shuffled = isinstance(sampler, t.utils.data.RandomSampler)
        sampler_generator = getattr(sampler, "generator", None) if shuffled else None
        entry = {
            "id": id(loader),
            "where": getattr(loader, "_repro_audit_where", "") or hook_where_fallback(self),
            "iterated_at": self.where(),
            "seq": self.tick(),
            "num_workers": int(loader.num_workers),
            "shuffle": shuffled,
            "generator": loader.generator is not None,
            "sampler_generator": sampler_generator is not None,
            "torch_seeded": self.torch_seed_ok(),
            "dataset": type(loader.dataset).__name__,
            "worker_init_fn": loader.worker_init_fn is not None,
            "dataset_rngs": [{"attribute": p, "type": ty, "seeded": s} for p, ty, s in self.rng_attributes(loader.dataset)],
        }
        self.loaders.append(entry)

    # ---- torch.save --------------------------------------------------------------------------
    def watch_saves(self):
        t = self.torch
        hook = self
        original = t.save

        def save(obj, f, *args, **kwargs):
            hook.guard("torch.save", hook.note_save, obj, f)
            return original(obj, f, *args, **kwargs)

        save.__wrapped__ = original
        t.save = save
        t.serialization.save = save

    def note_save(self, obj, f):
        t = self.torch
        path = os.fspath(f) if isinstance(f, (str, bytes, os.PathLike)) else ""
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        entry = {"path": path, "where": self.where(), "seq": self.tick()}
        if not isinstance(obj, dict):
            entry["kind"] = "tensor" if isinstance(obj, t.Tensor) else "other"
            self.saves.append(entry)
            return
        values = list(obj.values())
        if values and all(isinstance(v, t.Tensor) for v in values):
            entry["kind"] = "state_dict"
            self.saves.append(entry)
            return
        entry["kind"] = "checkpoint"
        found = set()
        budget = [20000]

        def visit(v, depth):
            budget[0] -= 1
            if budget[0] < 0 or depth > 6:
                return
            if isinstance(v, t.Tensor):
                if v.dtype == t.uint8 and v.dim() == 1:
                    if v.numel() == self.torch_state0.numel():
                        found.add("cpu")
                    elif v.numel() == 16:
                        found.add("cuda")
                return
            if isinstance(v, dict):
                if "bit_generator" in v and "state" in v:
                    found.add("numpy")
                for x in v.values():
                    visit(x, depth + 1)
                return
            if isinstance(v, tuple) and len(v) == 3 and isinstance(v[1], tuple) and len(v[1]) == 625:
                found.add("python")
                return
            if isinstance(v, tuple) and len(v) >= 3 and v[0] == "MT19937":
                found.add("numpy")
                return
            if isinstance(v, (list, tuple)):
                for x in v:
                    visit(x, depth + 1)

        visit(obj, 0)
        needed = ["cpu"]
        try:
            if t.cuda.is_initialized():
                needed.append("cuda")
        except Exception:
            pass
        # An RNG this process draws from after its last seed: resuming needs its state. (DataLoader
        # workers reseed theirs from the loader's base seed, which torch's CPU state covers.)
        if self.random.getstate() != self.random_state:
            needed.append("python")
        if self.numpy is not None and self.numpy_drawn():
            needed.append("numpy")
        entry["holds"] = sorted(found)
        entry["needed"] = needed
        self.saves.append(entry)

    def numpy_drawn_since_import(self):
        a, b = self.numpy.random.get_state(), self.numpy_state0
        return not (a[2] == b[2] and (a[1] == b[1]).all())

    # ---- torch.distributed -----------------------------------------------------------------
    def watch_distributed(self):
        t = self.torch
        hook = self
        try:
            dist = t.distributed
            if not dist.is_available():
                return
            original = dist.init_process_group
        except Exception:
            return

        def init_process_group(*args, **kwargs):
            r = original(*args, **kwargs)
            hook.guard("init_process_group", hook.note_backend)
            return r

        dist.init_process_group = init_process_group

    def note_backend(self):
        dist = self.torch.distributed
        self.backend = str(dist.get_backend())
        self.world_size = dist.get_world_size()

    # ---- the report --------------------------------------------------------------------------
    def report(self):
        import json

        out = {
            "format": "repro-audit/exec-hook-1",
            "pid": os.getpid(),
            "argv": list(sys.argv),
            "env": self.env,
            "torch": self.torch is not None,
            "errors": self.errors,
        }
        if self.torch is not None:
            t = self.torch
            out["torch_version"] = t.__version__
            out["requested"] = self.requested
            out["applied"] = self.applied
            out["effective"] = {k: self.guard("read " + k, self.read_switch, k) for k in self.CONTEXT}
            for k in self.COMPILE:
                out["effective"][k] = self.guard("read " + k, self.read_compile_switch, k)
            out["compiles"] = self.compiles
            out["random_ops"] = self.random_ops
            out["random_at"] = self.random_at
            out["compile_s"] = self.guard("compile time", self.compile_seconds)
            out["sets"] = self.sets
            out["backend"] = self.backend
            out["world_size"] = getattr(self, "world_size", None)
            out["torch_drawn"] = self.guard("torch rng", lambda: not t.equal(t.get_rng_state(), self.torch_state0))
            out["loaders"] = self.loaders
            out["first_op"] = self.first_op
            out["model_built"] = self.model_built
            out["saves"] = self.saves
            out["cuda_initialized"] = bool(self.guard("cuda", lambda: t.cuda.is_initialized()))
        out["seeds"] = self.seeds
        out["python_drawn"] = self.random.getstate() != self.random_state0
        if self.numpy is not None:
            out["numpy_drawn"] = bool(self.guard("numpy rng", self.numpy_drawn_since_import))
        out["unseeded_generators"] = [{"what": w, "where": where} for _, w, where in self.unseeded_generators]
        path = os.path.join(self.out_dir, "hook-%d.json" % os.getpid())
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f)
        os.replace(tmp, path)


# The modules the hook acts on when the program imports them, by their handler.
_Hook.WATCHED = {"torch": _Hook.on_torch, "numpy": _Hook.on_numpy, "torch._inductor.config": _Hook.on_inductor_config,
                 "torch._dynamo.config": _Hook.on_dynamo_config,
                 "torch._inductor.fx_passes.replace_random": _Hook.on_replace_random}


def hook_where_fallback(hook):
    return hook.where()


def _start():
    out_dir = os.environ.get("REPRO_AUDIT_HOOK_DIR")
    if not out_dir:
        return
    try:
        import multiprocessing

        # A DataLoader worker or another multiprocessing child started by spawn: not the program.
        if multiprocessing.parent_process() is not None:
            return
    except Exception:
        pass
    if os.environ.get("TORCHELASTIC_RUN_ID") and os.environ.get("LOCAL_RANK") is not None:
        # A torchrun rank lives in its own session: die with the launcher, as the launcher's
        # group dies with repro-audit.
        try:
            import ctypes
            import signal

            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    # A helper that a hooked process importing torch starts with its own environment (Inductor's
    # compile workers and ISA checks, a subprocess of the program's) is not the program: the hook
    # only chains there. A torchrun rank (RANK differs from its launcher's) is.
    owner = os.environ.get("REPRO_AUDIT_HOOKED", "")
    if owner.endswith(":torch") and owner.split(":")[1] == os.environ.get("RANK", ""):
        return
    os.environ["REPRO_AUDIT_HOOKED"] = "%d:%s:" % (os.getpid(), os.environ.get("RANK", ""))
    import atexit

    hook = _Hook(out_dir)
    hook.install_import_hook()
    atexit.register(lambda: hook.guard("report", hook.report))


try:
    _start()
except Exception as e:  # never break the program
    sys.stderr.write("repro-audit hook: %s\n" % e)
_chain()
