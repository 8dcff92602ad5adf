"""Check the Dockerfile's build steps on this machine, without a container runtime.

Usage: dockerfile_steps.py ROOT WORK [DOCKERFILE]   (WORK: an empty scratch folder)

Parses DOCKERFILE (default ROOT/Dockerfile) (line continuations, ARG defaults, stages) and checks:
- every plain COPY source exists in the repository and is not excluded by
  .dockerignore, and every COPY --from names an earlier stage;
- the builder's `cargo build` line names a package, features and binary that
  `cargo metadata` knows (the workspace itself is built by CI, not here);
- each runtime image (a stage with an ENTRYPOINT: `gpu`, and the last stage, the
  default target, `cpu`): the RUN lines of the stage it copies ONNX Runtime from
  (`onnxruntime`, `onnxruntime-gpu`), run as written in a folder of WORK (its
  WORKDIR) with this Python: the wheel download and the library extraction; then
  the files the image copies out of it exist, ORT_DYLIB_PATH names one of them,
  and that library loads and reports the pinned version; where a CUDA provider
  is copied in, the providers' shared library sits beside it, the image is an
  nvidia/cuda image of the CUDA major version the provider links (cudart,
  cuBLAS, cuBLASLt: `readelf -d`) and has cuDNN; the last stage has no CUDA
  provider (the default image is the CPU one);
- each runtime image: a non-root USER, ENTRYPOINT `trt serve`, no HEALTHCHECK.
The runtime images' own RUN lines (useradd, the gpu image's `trt --version` and
its ldd check) need the image and are not run here.
Every failure is printed; exit status 1 when there is any.
"""

import ctypes
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

ERRORS = []


def fail(message):
    ERRORS.append(message)
    print(f"error: {message}", file=sys.stderr)


def instructions(text):
    """(keyword, argument string) per instruction, continuations joined, comments dropped."""
    out, pending = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = pending + stripped
        pending = ""
        keyword, _, rest = full.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def substitute(text, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text)


def stages(parsed):
    """[{name, image, steps: [(keyword, arg)], args}] with ARG defaults substituted."""
    global_args, result = {}, []
    for keyword, arg in parsed:
        if keyword == "ARG" and not result:
            name, _, default = arg.partition("=")
            global_args[name] = default
            continue
        if keyword == "FROM":
            words = arg.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else str(len(result))
            result.append({"name": name, "image": substitute(words[0], global_args), "steps": [], "args": {}})
            continue
        stage = result[-1]
        if keyword == "ARG":
            name, _, default = arg.partition("=")
            stage["args"][name] = default or global_args.get(name, "")
            continue
        stage["steps"].append((keyword, substitute(arg, stage["args"])))
    return result


def copy_parts(arg):
    words = shlex.split(arg)
    flags = {w.split("=", 1)[0]: w.split("=", 1)[1] if "=" in w else "" for w in words if w.startswith("--")}
    paths = [w for w in words if not w.startswith("--")]
    return flags, paths[:-1], paths[-1]


def ignored(path, patterns):
    parts = os.path.normpath(path).split(os.sep)
    return any(fnmatch.fnmatch("/".join(parts[: i + 1]), p) for p in patterns for i in range(len(parts)))


def check_copies(root, all_stages):
    with open(os.path.join(root, ".dockerignore"), encoding="utf-8") as f:
        patterns = [line.strip().rstrip("/") for line in f if line.strip() and not line.startswith("#")]
    for p in (".git", "target", ".deps"):
        if p not in patterns:
            fail(f".dockerignore does not exclude {p}")
    seen = []
    for stage in all_stages:
        for keyword, arg in stage["steps"]:
            if keyword not in ("COPY", "ADD"):
                continue
            if keyword == "ADD":
                fail(f"stage {stage['name']}: ADD {arg} (use COPY: ADD may fetch URLs)")
            flags, sources, _ = copy_parts(arg)
            if "--from" in flags:
                if flags["--from"] not in seen:
                    fail(f"stage {stage['name']}: COPY --from={flags['--from']} names no earlier stage")
                continue
            for source in sources:
                if source != "." and (not os.path.exists(os.path.join(root, source)) or ignored(source, patterns)):
                    fail(f"stage {stage['name']}: COPY {source}: not in the build context")
        seen.append(stage["name"])


def check_cargo(root, stage):
    runs = [arg for keyword, arg in stage["steps"] if keyword == "RUN" and "cargo build" in arg]
    if len(runs) != 1:
        fail(f"stage {stage['name']}: expected one `cargo build` RUN line, found {len(runs)}")
        return None
    words = shlex.split(runs[0])
    package = features = None
    for i, w in enumerate(words):
        if w in ("-p", "--package"):
            package = words[i + 1]
        elif w == "--features":
            features = words[i + 1].replace(",", " ").split()
    if "--release" not in words or "--locked" not in words:
        fail("the cargo build line should build --release --locked")
    meta = json.loads(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"], cwd=root,
                                     check=True, capture_output=True, text=True).stdout)
    found = [p for p in meta["packages"] if p["name"] == package]
    if not found:
        fail(f"cargo build -p {package}: no such workspace package")
        return None
    for feature in features or []:
        if feature not in found[0]["features"]:
            fail(f"cargo build --features {feature}: {package} has no such feature (has {sorted(found[0]['features'])})")
    bins = [t["name"] for t in found[0]["targets"] if "bin" in t["kind"]]
    print(f"dockerfile: cargo build -p {package} --no-default-features={('--no-default-features' in words)} "
          f"--features {features}: known to cargo metadata (binaries {bins})")
    return bins


def run_stage(root, stage, work):
    """Run the stage's COPY (from the repository) and RUN lines in WORK, as its WORKDIR."""
    workdir = None
    for keyword, arg in stage["steps"]:
        if keyword == "WORKDIR":
            workdir = arg
        elif keyword == "COPY":
            _, sources, _ = copy_parts(arg)
            for source in sources:
                shutil.copy(os.path.join(root, source), work)
        elif keyword == "RUN":
            command = re.sub(r"^python(\s)", lambda m: shlex.quote(sys.executable) + m.group(1), arg)
            print(f"dockerfile: RUN {arg}")
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", command], cwd=work)
            if done.returncode != 0:
                fail(f"stage {stage['name']}: RUN {arg} exited {done.returncode}")
                return None
    return workdir


def ort_version(library):
    """ONNX Runtime's own version string, through OrtGetApiBase (its one exported entry point)."""
    lib = ctypes.CDLL(library)

    class ApiBase(ctypes.Structure):
        _fields_ = [("GetApi", ctypes.c_void_p), ("GetVersionString", ctypes.CFUNCTYPE(ctypes.c_char_p))]

    lib.OrtGetApiBase.restype = ctypes.POINTER(ApiBase)
    return lib.OrtGetApiBase().contents.GetVersionString().decode()


def needed(library):
    """The shared libraries `library` links (its ELF DT_NEEDED entries, through readelf)."""
    out = subprocess.run(["readelf", "-d", library], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def check_cuda(stage, folder):
    """A CUDA provider in `folder` against the stage's base image."""
    provider = os.path.join(folder, "libonnxruntime_providers_cuda.so")
    if not os.path.isfile(os.path.join(folder, "libonnxruntime_providers_shared.so")):
        fail(f"stage {stage['name']}: the CUDA provider without libonnxruntime_providers_shared.so beside it")
    image = re.fullmatch(r"nvidia/cuda:(\d+)\.(\d+)\.\d+-(\w+)-runtime-[\w.]+", stage["image"])
    if image is None:
        fail(f"stage {stage['name']}: the CUDA provider on {stage['image']}, not an nvidia/cuda *-runtime image")
        return
    major, flavour = image.group(1), image.group(3)
    links = needed(provider)
    cuda = {m.group(1): m.group(2) for m in (re.fullmatch(r"lib(cudart|cublas|cublasLt)\.so\.(\d+)", n) for n in links) if m}
    if set(cuda) != {"cudart", "cublas", "cublasLt"}:
        fail(f"stage {stage['name']}: the CUDA provider links {links}, expected cudart, cublas and cublasLt")
    wrong = {lib: v for lib, v in cuda.items() if v != major}
    if wrong:
        fail(f"stage {stage['name']}: the CUDA provider links CUDA {wrong}, the image {stage['image']} is CUDA {major}")
    if flavour != "cudnn":
        fail(f"stage {stage['name']}: {stage['image']} has no cuDNN (ONNX Runtime's CUDA provider loads it)")
    print(f"dockerfile: stage {stage['name']}: the CUDA provider links {', '.join(f'lib{k}.so.{v}' for k, v in sorted(cuda.items()))}; "
          f"{stage['image']} is CUDA {major}.{image.group(2)} with cuDNN")


def check_runtime(stage, by_name, bins, work, ran):
    """One runtime image: what it copies in, its ONNX Runtime library, user and entrypoint."""
    env, dirs = {}, []
    for keyword, arg in stage["steps"]:
        if keyword == "ENV":
            name, _, value = arg.partition("=")
            env[name] = value
        elif keyword == "COPY":
            flags, sources, dest = copy_parts(arg)
            origin = flags.get("--from")
            for source in sources:
                if origin == "builder":
                    if not (source.startswith("/src/target/release/") and os.path.basename(source) in bins):
                        fail(f"stage {stage['name']}: COPY --from=builder {source}: not a binary of the cargo build line ({bins})")
                elif origin in by_name:
                    if origin not in ran:
                        folder = os.path.join(work, origin)
                        os.makedirs(folder)
                        ran[origin] = (folder, run_stage(ROOT, by_name[origin], folder))
                    folder, workdir = ran[origin]
                    if workdir is None:
                        continue
                    local = os.path.join(folder, os.path.relpath(source, workdir))
                    if not os.path.exists(local):
                        fail(f"stage {stage['name']}: COPY --from={origin} {source}: the stage's steps made no such file")
                    elif os.path.isdir(local):
                        dirs.append((dest, local, origin))
    dylib = env.get("ORT_DYLIB_PATH")
    cuda = False
    if not dylib:
        fail(f"stage {stage['name']} sets no ORT_DYLIB_PATH")
    else:
        found = [(os.path.join(folder, dylib[len(dest):].lstrip("/")), origin) for dest, folder, origin in dirs if dylib.startswith(dest)]
        if not found or not os.path.isfile(found[0][0]):
            fail(f"stage {stage['name']}: ORT_DYLIB_PATH={dylib}: no such file among what the stage copies in")
        else:
            local, origin = found[0]
            wanted = by_name[origin]["args"].get("ORT_VERSION")
            version = ort_version(local)
            if version != wanted:
                fail(f"stage {stage['name']}: {dylib} reports ONNX Runtime {version}, the Dockerfile pins {wanted}")
            print(f"dockerfile: stage {stage['name']}: ORT_DYLIB_PATH={dylib} (from {origin}): ONNX Runtime {version} loads (OrtGetApiBase)")
            folder = os.path.dirname(local)
            cuda = os.path.isfile(os.path.join(folder, "libonnxruntime_providers_cuda.so"))
            if cuda:
                check_cuda(stage, folder)
    keywords = {k for k, _ in stage["steps"]}
    user = [a for k, a in stage["steps"] if k == "USER"]
    if not user or user[-1].split(":")[0] in ("0", "root"):
        fail(f"stage {stage['name']} runs as root (USER {user})")
    if "HEALTHCHECK" in keywords:
        fail(f"stage {stage['name']} has a HEALTHCHECK (Kubernetes probes the v2 health routes)")
    entry = [a for k, a in stage["steps"] if k == "ENTRYPOINT"]
    if not entry or json.loads(entry[-1])[:2] != ["trt", "serve"] or "trt" not in bins:
        fail(f"stage {stage['name']}: ENTRYPOINT should be [\"trt\", \"serve\"] (found {entry})")
    return cuda


ROOT = None


def main(root, work, dockerfile=None):
    global ROOT
    ROOT = root
    with open(dockerfile or os.path.join(root, "Dockerfile"), encoding="utf-8") as f:
        all_stages = stages(instructions(f.read()))
    by_name = {s["name"]: s for s in all_stages}
    check_copies(root, all_stages)
    if "builder" not in by_name:
        fail("the Dockerfile needs a stage `builder`")
        return 1
    bins = check_cargo(root, by_name["builder"]) or []
    if ERRORS:
        return 1
    runtimes = [s for s in all_stages if any(k == "ENTRYPOINT" for k, _ in s["steps"])]
    if not runtimes or runtimes[-1] is not all_stages[-1]:
        fail("the last stage (the default target) should be a runtime image with an ENTRYPOINT")
    ran, cuda = {}, {}
    for stage in runtimes:
        cuda[stage["name"]] = check_runtime(stage, by_name, bins, work, ran)
    if cuda.get(all_stages[-1]["name"]):
        fail("the last stage, the default target, has the CUDA provider (the default image is the CPU one)")
    if not any(cuda.values()):
        fail("no runtime image has ONNX Runtime's CUDA provider (the `gpu` target)")
    if ERRORS:
        return 1
    print(f"dockerfile: {len(all_stages)} stages checked, runtime images {[s['name'] for s in runtimes]} "
          f"(CUDA: {[n for n, c in cuda.items() if c]})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
