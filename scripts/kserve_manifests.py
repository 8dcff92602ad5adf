"""Validate KServe manifests against the kserve SDK's API types.

Usage: kserve_manifests.py FILE...   (each file may hold several YAML documents)

Every document's apiVersion and kind name a class of the kserve SDK's generated
models (`serving.kserve.io/v1alpha1` + `ServingRuntime` -> `V1alpha1ServingRuntime`,
`v1beta1` + `InferenceService` -> `V1beta1InferenceService`), and the document is
walked against that class's `openapi_types` / `attribute_map`, down through the
Kubernetes client's classes it names (`V1Container`, `V1Probe`, ...). A key the
type does not declare, or a value of the wrong JSON type, is an error naming its
path: the API server rejects such a field under strict field validation and
silently drops it otherwise. The SDK's package `__init__` imports its model server
(fastapi, grpc, pandas), which reading the types does not need: the packages are
entered without running their `__init__`, and only the model modules are loaded.
Exit status: 0 when every document is valid, 1 otherwise.
"""

import importlib
import importlib.util
import os
import re
import sys
import types

import yaml

MODEL_PACKAGES = ("kserve.models", "kubernetes.client.models")
PRIMITIVES = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "datetime": (str,),
    "date": (str,),
}

# Generic types as the generator spells them: (pattern, JSON type, name, (path suffix, item) pairs).
CONTAINERS = (
    (r"list\[(.+)\]", list, "list", lambda v: ((f"[{i}]", item) for i, item in enumerate(v))),
    (r"dict\(str, (.+)\)", dict, "map", lambda v: ((f".{k}", item) for k, item in v.items())),
)


def enter_packages():
    """Register kserve, kubernetes and kubernetes.client as bare packages (no __init__ run)."""
    for name in ("kserve", "kubernetes", "kubernetes.client", "kserve.models", "kubernetes.client.models"):
        parent, _, leaf = name.rpartition(".")
        if parent:
            location = os.path.join(sys.modules[parent].__path__[0], leaf)
        else:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.submodule_search_locations:
                sys.exit(f"kserve_manifests: package {name} is not installed (scripts/setup makes .deps/venv-kserve)")
            location = list(spec.submodule_search_locations)[0]
        package = types.ModuleType(name)
        package.__path__ = [location]
        sys.modules[name] = package


def class_index():
    """Class name -> module name, over both packages' generated model modules."""
    index = {}
    for package in MODEL_PACKAGES:
        folder = sys.modules[package].__path__[0]
        for entry in sorted(os.listdir(folder)):
            if not entry.endswith(".py") or entry == "__init__.py":
                continue
            with open(os.path.join(folder, entry), encoding="utf-8") as f:
                for match in re.finditer(r"^class (\w+)\(object\):", f.read(), re.M):
                    index.setdefault(match.group(1), f"{package}.{entry[:-3]}")
    return index


class Checker:
    def __init__(self):
        self.index = class_index()
        self.errors = []

    def model(self, name):
        module = self.index.get(name)
        if module is None:
            return None
        return getattr(importlib.import_module(module), name)

    def check(self, value, type_name, path):
        if value is None:
            return
        if type_name == "object":
            return
        if type_name in PRIMITIVES:
            allowed = PRIMITIVES[type_name]
            if not isinstance(value, allowed) or (bool not in allowed and isinstance(value, bool)):
                self.errors.append(f"{path}: expected {type_name}, found {type(value).__name__} {value!r}")
            return
        for pattern, container, what, items in CONTAINERS:
            m = re.fullmatch(pattern, type_name)
            if m:
                if not isinstance(value, container):
                    self.errors.append(f"{path}: expected a {what} of {m.group(1)}, found {type(value).__name__}")
                else:
                    for suffix, item in items(value):
                        self.check(item, m.group(1), path + suffix)
                return
        cls = self.model(type_name)
        if cls is None:
            self.errors.append(f"{path}: type {type_name} is in neither {' nor '.join(MODEL_PACKAGES)}")
            return
        if not isinstance(value, dict):
            self.errors.append(f"{path}: expected a {type_name} object, found {type(value).__name__} {value!r}")
            return
        by_key = {json_key: attr for attr, json_key in cls.attribute_map.items()}
        for key, item in value.items():
            attr = by_key.get(key)
            if attr is None:
                known = ", ".join(sorted(by_key))
                self.errors.append(f"{path}.{key}: unknown field of {type_name} (known: {known})")
                continue
            self.check(item, cls.openapi_types[attr], f"{path}.{key}")

    def document(self, doc, where):
        if not isinstance(doc, dict):
            self.errors.append(f"{where}: not a mapping")
            return
        api_version, kind = doc.get("apiVersion", ""), doc.get("kind", "")
        group, _, version = str(api_version).rpartition("/")
        if group != "serving.kserve.io" or not version or not kind:
            self.errors.append(f"{where}: apiVersion {api_version!r} kind {kind!r} is not a serving.kserve.io resource")
            return
        type_name = f"{version[0].upper()}{version[1:]}{kind}"
        if self.model(type_name) is None:
            self.errors.append(f"{where}: the kserve SDK has no type {type_name} for {api_version} {kind}")
            return
        self.check(doc, type_name, f"{where} {kind}/{doc.get('metadata', {}).get('name', '?')}")


def main(paths):
    enter_packages()
    checker = Checker()
    count = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc is None:
                    continue
                checker.document(doc, f"{path}#{i}")
                count += 1
    for error in checker.errors:
        print(f"error: {error}", file=sys.stderr)
    if checker.errors:
        return 1
    print(f"kserve_manifests: {count} documents valid against the kserve SDK's types")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))
