# SPDX-License-Identifier: Apache-2.0
# RA_HAVE_NATIVERT: whether this torch's libraries export LibTorch's NativeRT
# (torch::nativert::ModelRunnerHandle), the second runtime of torch.export archives
# (worker/targets/export.cpp). torch 2.11 exports it; the 2.12 to 2.15 wheels declare it in their
# headers but export no symbol of it, so a worker that referenced it would not link. The check reads
# the dynamic symbol table of libtorch_cpu (nm, from binutils beside the compiler), which is what
# the link needs; without nm it falls back on the version (2.11 only). -DRA_NATIVERT=OFF leaves it out.
option(RA_NATIVERT "Build NativeRT as a second runtime of torch.export archives where torch exports it" ON)
set(RA_HAVE_NATIVERT OFF)
if(RA_NATIVERT AND RA_TORCH_CPU_LIBRARY)
  find_program(RA_NM NAMES nm ${CMAKE_NM})
  if(RA_NM)
    execute_process(COMMAND ${RA_NM} -D --defined-only "${RA_TORCH_CPU_LIBRARY}" OUTPUT_VARIABLE _ra_symbols
                    ERROR_QUIET RESULT_VARIABLE _ra_nm_rc)
    if(_ra_nm_rc EQUAL 0 AND _ra_symbols MATCHES "nativert[0-9]+ModelRunnerHandleC[12]")
      set(RA_HAVE_NATIVERT ON)
    endif()
    unset(_ra_symbols)
  elseif(Torch_VERSION VERSION_GREATER_EQUAL 2.11 AND Torch_VERSION VERSION_LESS 2.12)
    set(RA_HAVE_NATIVERT ON)
  endif()
endif()
message(STATUS "NativeRT (second runtime of export archives): ${RA_HAVE_NATIVERT}")
