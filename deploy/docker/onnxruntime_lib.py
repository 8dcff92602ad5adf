"""Take ONNX Runtime's C library out of the onnxruntime wheel (a zip file).

Usage: onnxruntime_lib.py WHEEL_DIR DEST VERSION

Copies `onnxruntime/capi/libonnxruntime.so.VERSION` and the wheel's license files
into DEST, as scripts/setup does for the development machine: the runtime image
needs the one shared library, not Python. Run by the Dockerfile's `onnxruntime`
stage and, outside any container, by scripts/check-deploy.
"""

import glob
import os
import shutil
import sys
import zipfile


def main(wheels, dest, version):
    found = sorted(glob.glob(os.path.join(wheels, f"onnxruntime-{version}-*.whl")))
    if not found:
        sys.exit(f"onnxruntime_lib: no onnxruntime-{version} wheel in {wheels}")
    library = f"onnxruntime/capi/libonnxruntime.so.{version}"
    os.makedirs(dest, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as wheel:
        names = wheel.namelist()
        if library not in names:
            sys.exit(f"onnxruntime_lib: {found[-1]} has no {library}")
        wanted = [library] + [n for n in ("onnxruntime/LICENSE", "onnxruntime/ThirdPartyNotices.txt") if n in names]
        for name in wanted:
            with wheel.open(name) as src, open(os.path.join(dest, os.path.basename(name)), "wb") as dst:
                shutil.copyfileobj(src, dst)
    print(f"onnxruntime_lib: {library} -> {dest}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
