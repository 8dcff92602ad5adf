"""Take ONNX Runtime's C library out of an onnxruntime wheel (a zip file).

Usage: onnxruntime_lib.py WHEEL_DIR DEST VERSION [PACKAGE [PROVIDER...]]

PACKAGE is the PyPI project the wheel is of: onnxruntime (the default, CPU) or
onnxruntime-gpu. Copies `onnxruntime/capi/libonnxruntime.so.VERSION`, for each
PROVIDER (e.g. `cuda`) `libonnxruntime_providers_PROVIDER.so` and the providers'
`libonnxruntime_providers_shared.so` (ONNX Runtime loads them from its own
library's folder), and the wheel's license files into DEST, as scripts/setup does
for the development machine: the runtime image needs the shared libraries, not
Python. Run by the Dockerfile's `onnxruntime` and `onnxruntime-gpu` stages and,
outside any container, by scripts/check-deploy.
"""

import glob
import os
import re
import shutil
import sys
import zipfile


def main(wheels, dest, version, package="onnxruntime", *providers):
    # A wheel's file name spells the project with underscores (PEP 427).
    project = re.sub(r"[-_.]+", "_", package)
    found = sorted(glob.glob(os.path.join(wheels, f"{project}-{version}-*.whl")))
    if not found:
        sys.exit(f"onnxruntime_lib: no {package} {version} wheel in {wheels}")
    capi = "onnxruntime/capi"
    libraries = [f"{capi}/libonnxruntime.so.{version}"]
    if providers:
        libraries.append(f"{capi}/libonnxruntime_providers_shared.so")
        libraries += [f"{capi}/libonnxruntime_providers_{p}.so" for p in providers]
    os.makedirs(dest, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as wheel:
        names = wheel.namelist()
        missing = [lib for lib in libraries if lib not in names]
        if missing:
            sys.exit(f"onnxruntime_lib: {found[-1]} has no {', '.join(missing)}")
        wanted = libraries + [n for n in ("onnxruntime/LICENSE", "onnxruntime/ThirdPartyNotices.txt") if n in names]
        for name in wanted:
            with wheel.open(name) as src, open(os.path.join(dest, os.path.basename(name)), "wb") as dst:
                shutil.copyfileobj(src, dst)
    print(f"onnxruntime_lib: {', '.join(os.path.basename(lib) for lib in libraries)} from {os.path.basename(found[-1])} -> {dest}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
