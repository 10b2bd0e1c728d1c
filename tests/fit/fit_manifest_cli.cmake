# cmake -DFIT=<path of vkblr-fit> -DPYTHON=<python3> -DWORK=<scratch dir> -P tests/fit/fit_manifest_cli.cmake
#
# vkblr-fit --manifest end to end through its command line: a manifest of
# two layers and a 1-D tensor (a bad layer) is refused by default (exit 1,
# the bad layer named, nothing written), runs with --on-bad-layer skip
# (exit 0; --json prints the report: complete, one layer skipped) and,
# again with --resume, takes both layers from the work directory and
# writes the same model file. --model-bpw: refused without --manifest, for
# a value that is no positive number, and for a manifest whose defaults
# give every layer a rank; a manifest without one runs under the budget,
# with the allocation's table on stderr and in the report.
if(NOT FIT OR NOT PYTHON OR NOT WORK)
  message(FATAL_ERROR "fit_manifest_cli.cmake needs -DFIT=..., -DPYTHON=... and -DWORK=...")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# the inputs: W of two 64x64 layers and a bias (F32), X of each [320][64]
file(WRITE ${WORK}/make_inputs.py [=[
import json, random, struct
def write(path, tensors):
    header, data = {}, b""
    for name, (shape, values) in tensors.items():
        b = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)
random.seed(3)
def matrix(m, n, s):
    return ([m, n], [random.gauss(0, s) for _ in range(m * n)])
write("w.safetensors", {"l.0.weight": matrix(64, 64, 0.05), "l.1.weight": matrix(64, 64, 0.05),
                        "l.1.bias": ([64], [0.5] * 64)})
write("x.safetensors", {"l.0": matrix(320, 64, 1.0), "l.1": matrix(320, 64, 1.0)})
layers = [{"weight": "w.safetensors", "tensors": "l.*", "activations": "x.safetensors",
           "activations_tensor": "{module}"}]
json.dump({"defaults": {"rank": 32, "batch": 64, "tokens": 256, "held_out": 64, "steps": 4},
           "layers": layers}, open("job.json", "w"))
json.dump({"defaults": {"batch": 64, "tokens": 256, "held_out": 64, "steps": 4}, "layers": layers},
          open("budget.json", "w"))
]=])
execute_process(COMMAND ${PYTHON} make_inputs.py WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_inputs.py failed: ${rc}")
endif()

set(failures "")
# run(<exit code> <stdout regex> <stderr regex> ARGS...)
function(run want_rc want_out want_err)
  execute_process(COMMAND ${FIT} ${ARGN} WORKING_DIRECTORY ${WORK} TIMEOUT 300
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL want_rc OR NOT out MATCHES "${want_out}" OR NOT err MATCHES "${want_err}")
    set(failures "${failures}\n  vkblr-fit ${ARGN}: exit ${rc} (want ${want_rc})\n  stdout: ${out}\n  stderr: ${err}"
        PARENT_SCOPE)
  else()
    message(STATUS "vkblr-fit ${ARGN}: exit ${rc}")
  endif()
endfunction()

run(1 "" "1 bad layer\\(s\\).*'l.1.bias' \\(layers\\[0\\], w.safetensors:l.1.bias\\): W is 1-D \\[64\\]"
    --manifest job.json --out m --quiet)
if(EXISTS ${WORK}/m.safetensors OR EXISTS ${WORK}/m.layers)
  string(APPEND failures "\n  a refused manifest run wrote files")
endif()
run(0 "\"complete\": true.*\"skipped\": \"W is 1-D \\[64\\]" "^$"
    --manifest job.json --out m --on-bad-layer skip --quiet --json)
file(READ ${WORK}/m.safetensors first HEX)
run(0 "\"resumed\": true.*\"resumed\": true.*\"resumed\": 2" ""
    --manifest job.json --out m --on-bad-layer skip --resume --json)
file(READ ${WORK}/m.safetensors again HEX)
if(NOT first STREQUAL again)
  string(APPEND failures "\n  the resumed run's m.safetensors differs from the first run's")
endif()

run(2 "" "--model-bpw goes with --manifest" --model-bpw 2)
run(2 "" "--model-bpw nan: want a positive number" --manifest job.json --model-bpw nan)
run(1 "" "--model-bpw 4: manifest job.json gives 'rank' or 'bpw' in 'defaults'"
    --manifest job.json --out m --on-bad-layer skip --model-bpw 4 --quiet)
# two 64x64 layers: 3.28 bpw at rank 32 each, 5.53 at 64; 4.5 pays for one step
run(0 "\"allocation\": {.*\"model_bpw\": 4.5"
    "--model-bpw 4.5: 4.40[0-9]+ bpw .*rank +bpw +curve error +layer\n +(32|64) +[0-9.]+ +[0-9.]+ +l.0.weight \\(64x64\\)"
    --manifest budget.json --out b --on-bad-layer skip --model-bpw 4.5 --json)

if(failures)
  message(FATAL_ERROR "vkblr-fit --manifest:${failures}")
endif()
message(STATUS "vkblr-fit --manifest: bad layers refused or skipped, the report on stdout, a resumed run the same file, "
               "--model-bpw refused or run")
