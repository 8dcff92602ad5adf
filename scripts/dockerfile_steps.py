"""Check the Dockerfile's build steps on this machine, without a container runtime.

Usage: dockerfile_steps.py ROOT WORK [DOCKERFILE]   (WORK: an empty scratch folder)

Parses DOCKERFILE (default ROOT/Dockerfile) (line continuations, ARG defaults, stages) and checks:
- every plain COPY source exists in the repository and is not excluded by
  .dockerignore, and every COPY --from names an earlier stage;
- the builder's `cargo build` line names a package, features and binary that
  `cargo metadata` knows (the workspace itself is built by CI, not here);
- the `onnxruntime` stage's RUN lines, run as written in WORK (its WORKDIR),
  with this Python: the wheel download and the library extraction; then the
  files the final stage copies out of it exist, ORT_DYLIB_PATH names one of
  them, and that library loads and reports the pinned version;
- the final stage: a non-root USER, ENTRYPOINT `trt serve`, no HEALTHCHECK.
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
            result.append({"name": name, "image": words[0], "steps": [], "args": {}})
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


def main(root, work, dockerfile=None):
    with open(dockerfile or os.path.join(root, "Dockerfile"), encoding="utf-8") as f:
        all_stages = stages(instructions(f.read()))
    by_name = {s["name"]: s for s in all_stages}
    final = all_stages[-1]
    check_copies(root, all_stages)
    if "builder" not in by_name or "onnxruntime" not in by_name:
        fail("the Dockerfile needs stages `builder` and `onnxruntime`")
        return 1
    bins = check_cargo(root, by_name["builder"]) or []
    workdir = run_stage(root, by_name["onnxruntime"], work)
    env = {}
    for keyword, arg in final["steps"]:
        if keyword == "ENV":
            name, _, value = arg.partition("=")
            env[name] = value
        elif keyword == "COPY":
            flags, sources, dest = copy_parts(arg)
            origin = flags.get("--from")
            for source in sources:
                if origin == "builder":
                    if not (source.startswith("/src/target/release/") and os.path.basename(source) in bins):
                        fail(f"COPY --from=builder {source}: not a binary of the cargo build line ({bins})")
                elif origin == "onnxruntime" and workdir is not None:
                    local = os.path.join(work, os.path.relpath(source, workdir))
                    if not os.path.exists(local):
                        fail(f"COPY --from=onnxruntime {source}: the stage's steps made no such file")
                    elif os.path.isdir(local):
                        env.setdefault("_ort_dirs", []).append((dest, local))
    dylib = env.get("ORT_DYLIB_PATH")
    if not dylib:
        fail("the final stage sets no ORT_DYLIB_PATH")
    else:
        local = None
        for dest, folder in env.get("_ort_dirs", []):
            if dylib.startswith(dest):
                local = os.path.join(folder, dylib[len(dest):].lstrip("/"))
        if local is None or not os.path.isfile(local):
            fail(f"ORT_DYLIB_PATH={dylib}: no such file among what the final stage copies in")
        else:
            wanted = by_name["onnxruntime"]["args"].get("ORT_VERSION")
            version = ort_version(local)
            if version != wanted:
                fail(f"{dylib} reports ONNX Runtime {version}, the Dockerfile pins {wanted}")
            print(f"dockerfile: ORT_DYLIB_PATH={dylib}: ONNX Runtime {version} loads (OrtGetApiBase)")
    keywords = {k for k, _ in final["steps"]}
    user = [a for k, a in final["steps"] if k == "USER"]
    if not user or user[-1].split(":")[0] in ("0", "root"):
        fail(f"the final stage runs as root (USER {user})")
    if "HEALTHCHECK" in keywords:
        fail("the final stage has a HEALTHCHECK (Kubernetes probes the v2 health routes)")
    entry = [a for k, a in final["steps"] if k == "ENTRYPOINT"]
    if not entry or json.loads(entry[-1])[:2] != ["trt", "serve"] or "trt" not in bins:
        fail(f"ENTRYPOINT should be [\"trt\", \"serve\"] (found {entry})")
    if ERRORS:
        return 1
    print(f"dockerfile: {len(all_stages)} stages checked")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
