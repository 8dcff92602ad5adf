//! The order, checked with environments passed as closures (no process
//! variable is set, so the tests cannot race) and folders in temp dirs.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::*;

/// An environment holding exactly `vars`.
fn env_of(vars: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: Vec<(String, OsString)> = vars.iter().map(|(k, v)| ((*k).to_owned(), v.as_os_str().to_owned())).collect();
    move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

/// A prefix with `lib/python3.11/site-packages/<sub>` for each sub.
fn python_prefix(root: &Path, name: &str, subs: &[&str]) -> (PathBuf, PathBuf) {
    let prefix = root.join(name);
    let site = prefix.join("lib/python3.11/site-packages");
    for sub in subs {
        std::fs::create_dir_all(site.join(sub)).unwrap();
    }
    (prefix, site)
}

fn paths(places: &[Place]) -> Vec<Option<PathBuf>> {
    places.iter().map(|p| p.path.clone()).collect()
}

#[test]
fn the_tiers_come_in_the_documented_order_for_every_concern() {
    let tmp = tempfile::tempdir().unwrap();
    let (venv, _) = python_prefix(tmp.path(), "venv", &["onnxruntime/capi"]);
    let setup = tmp.path().join("deps");
    let cuda = tmp.path().join("cuda");
    let env = env_of(&[("TRT_DEPS_DIR", &setup), ("VIRTUAL_ENV", &venv), ("CUDA_HOME", &cuda)]);
    for spec in [tensorrt_library(), tensorrt_headers(&env), cuda_headers(), onnxruntime_library()] {
        let places = spec.places(None, &env);
        let tiers: Vec<Tier> = places.iter().map(|p| p.tier).collect();
        assert!(tiers.windows(2).all(|w| w[0] <= w[1]), "{spec:?}: {tiers:?}");
        assert!(!tiers.contains(&Tier::Explicit), "nothing explicit was given: {tiers:?}");
        assert_eq!(tiers.contains(&Tier::LoaderPath), spec.loader_path);
        assert!(places.iter().filter(|p| p.tier == Tier::Variable).any(|p| p.source == SETUP_DIR), "{places:?}");
    }
}

#[test]
fn the_tensorrt_library_search_lists_each_tier_in_full() {
    let tmp = tempfile::tempdir().unwrap();
    let (venv, site) = python_prefix(tmp.path(), "venv", &["tensorrt_rtx_libs"]);
    let setup = tmp.path().join("deps");
    let places = tensorrt_library().places(None, &env_of(&[("TRT_DEPS_DIR", &setup), ("VIRTUAL_ENV", &venv)]));
    let mut expected: Vec<Option<PathBuf>> = TENSORRT_WHEEL_DIRS.iter().map(|w| Some(setup.join("lib").join(w))).collect();
    expected.push(None);
    expected.extend(["/usr/local/tensorrt/lib", "/usr/local/TensorRT/lib", "/opt/tensorrt/lib"].map(|d| Some(PathBuf::from(d))));
    // The virtualenv's site-packages first; the system's (if any) after it.
    expected.extend(TENSORRT_WHEEL_DIRS.iter().map(|w| Some(site.join(w))));
    assert_eq!(paths(&places)[..expected.len()], expected[..]);
    assert!(places[expected.len()..].iter().all(|p| p.tier == Tier::SitePackages), "{places:?}");
    assert_eq!(places[3].source, "the dynamic loader's path");
    assert_eq!(places[3].file("libnvinfer.so.10"), PathBuf::from("libnvinfer.so.10"));
    assert_eq!(places[0].file("libnvinfer.so.10"), setup.join("lib/tensorrt_libs/libnvinfer.so.10"));
}

#[test]
fn an_explicit_path_or_variable_is_the_only_place() {
    let tmp = tempfile::tempdir().unwrap();
    let setup = tmp.path().join("deps");
    let given = tmp.path().join("given");
    let env = env_of(&[("TRT_DEPS_DIR", &setup), ("TENSORRT_LIB_DIR", Path::new("/trt/lib"))]);
    let only = tensorrt_library().places(Some(&given), &env);
    assert_eq!(only, vec![Place { tier: Tier::Explicit, path: Some(given), source: "the path given" }]);
    let only = tensorrt_library().places(None, &env);
    assert_eq!(only, vec![Place { tier: Tier::Explicit, path: Some("/trt/lib".into()), source: "TENSORRT_LIB_DIR" }]);
    // ORT_DYLIB_PATH may name the file itself.
    let file = Path::new("/x/libonnxruntime.so.1.31.1");
    assert_eq!(paths(&onnxruntime_library().places(None, &env_of(&[("ORT_DYLIB_PATH", file)]))), vec![Some(file.to_owned())]);
}

#[test]
fn the_first_explicit_header_variable_wins_and_a_root_means_its_include_folder() {
    let both = env_of(&[("TENSORRT_INCLUDE_DIR", Path::new("/a/include")), ("TENSORRT_ROOT", Path::new("/b"))]);
    let root = env_of(&[("TENSORRT_ROOT", Path::new("/b"))]);
    assert_eq!(paths(&tensorrt_headers(&both).places(None, &both)), vec![Some("/a/include".into())]);
    assert_eq!(paths(&tensorrt_headers(&root).places(None, &root)), vec![Some("/b/include".into())]);
}

#[test]
fn the_header_set_of_the_setup_folder_is_chosen_by_trt_headers() {
    let deps = Path::new("/deps");
    let default = env_of(&[("TRT_DEPS_DIR", deps)]);
    let chosen = env_of(&[("TRT_DEPS_DIR", deps), ("TRT_HEADERS", Path::new("TRT-Enterprise-10.16"))]);
    assert_eq!(tensorrt_headers(&default).places(None, &default)[0].path, Some(deps.join("headers").join(DEFAULT_HEADER_SET)));
    assert_eq!(tensorrt_headers(&chosen).places(None, &chosen)[0].path, Some(deps.join("headers/TRT-Enterprise-10.16")));
    let first_installed = tensorrt_headers(&default).places(None, &default)[1].clone();
    assert_eq!((first_installed.tier, first_installed.path), (Tier::Installed, Some("/usr/include/x86_64-linux-gnu".into())));
}

#[test]
fn cuda_roots_come_before_the_setup_folder_in_their_own_order() {
    let env = env_of(&[("TRT_DEPS_DIR", Path::new("/deps")), ("CUDA_ROOT", Path::new("/r")), ("CUDA_PATH", Path::new("/p"))]);
    let places = cuda_headers().places(None, &env);
    let expected: Vec<Option<PathBuf>> =
        ["/p/include", "/r/include", "/deps/cuda/include", "/usr/local/cuda/include", "/usr/include"].map(|p| Some(p.into())).into();
    assert_eq!(paths(&places)[..expected.len()], expected[..]);
    assert_eq!((places[0].source, places[1].source, places[2].source), ("CUDA_PATH", "CUDA_ROOT", SETUP_DIR));
    let explicit = env_of(&[("CUDA_INCLUDE_DIR", Path::new("/c")), ("CUDA_PATH", Path::new("/p"))]);
    assert_eq!(paths(&cuda_headers().places(None, &explicit)), vec![Some("/c".into())]);
}

#[test]
fn without_trt_deps_dir_no_setup_folder_is_searched_and_empty_values_count_as_unset() {
    let empty = |name: &str| (name == "TRT_DEPS_DIR" || name == "ORT_DYLIB_PATH").then(OsString::new);
    for spec in [tensorrt_library(), onnxruntime_library()] {
        let places = spec.places(None, &empty);
        assert_eq!(places[0].tier, Tier::LoaderPath, "{places:?}");
        assert!(places.iter().all(|p| p.source != SETUP_DIR));
    }
}

#[test]
fn site_packages_follow_python_s_preference_and_skip_what_is_not_there() {
    let tmp = tempfile::tempdir().unwrap();
    let (venv, venv_site) = python_prefix(tmp.path(), "venv", &[""]);
    let (conda, conda_site) = python_prefix(tmp.path(), "conda", &[""]);
    let (_, setup_site) = python_prefix(&tmp.path().join("deps"), "venv", &[""]);
    let (_, user_site) = python_prefix(&tmp.path().join("home"), ".local", &[""]);
    std::fs::create_dir_all(venv.join("lib/not-python")).unwrap();
    let extra = tmp.path().join("pythonpath");
    std::fs::create_dir_all(&extra).unwrap();
    let missing = tmp.path().join("missing");
    let pythonpath = std::env::join_paths([&extra, &missing]).unwrap();
    let deps = tmp.path().join("deps");
    let home = tmp.path().join("home");
    let env = env_of(&[
        ("PYTHONPATH", Path::new(&pythonpath)),
        ("VIRTUAL_ENV", &venv),
        ("CONDA_PREFIX", &conda),
        ("TRT_DEPS_DIR", &deps),
        ("HOME", &home),
    ]);
    let sites = site_packages(&env);
    assert_eq!(sites[..5], [extra, venv_site, conda_site, setup_site, user_site]);
    assert!(sites[5..].iter().all(|s| python::SYSTEM_PREFIXES.iter().any(|p| s.starts_with(p))), "{sites:?}");
}

#[test]
fn variables_read_names_every_variable_a_search_can_read() {
    let vars = onnxruntime_library().variables_read();
    for v in ["ORT_DYLIB_PATH", "TRT_DEPS_DIR", "VIRTUAL_ENV", "PYTHONPATH"] {
        assert!(vars.contains(&v), "{vars:?}");
    }
    let env = |_: &str| None;
    let headers = tensorrt_headers(&env).variables_read();
    assert_eq!(headers, ["TENSORRT_INCLUDE_DIR", "TENSORRT_ROOT", "TRT_DEPS_DIR"]);
}
