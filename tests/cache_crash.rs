//! Crash safety of the caches: a process killed with SIGKILL while it writes
//! the engine cache or a timing cache never leaves an entry that a later run
//! uses, and what it leaves behind is cleaned up.
//!
//! The writer is a child process: this test binary run again with
//! `TRT_CACHE_CRASH_CHILD` set, so it runs the real `EngineCache` and
//! `TimingCache::save` code. The parent kills it at random points, some
//! aimed at the write window (the moment a temporary file appears), then
//! checks, in process, what a later run sees. Bounded: `KILLS` children per
//! test and `TIME_LIMIT` in all; the seed is printed (`TRT_CACHE_CRASH_SEED`
//! repeats a run).
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use trt::{Builder, BuilderConfig, CacheOutcome, EngineCache, OnnxParser, ProfileSpec, ShapeRange};

const CHILD: &str = "TRT_CACHE_CRASH_CHILD";
const KILLS: usize = 10;
const TIME_LIMIT: Duration = Duration::from_secs(90);

/// A small xorshift generator: enough to spread kill points, and repeatable.
struct Rng(u64);

impl Rng {
    fn from_env() -> Rng {
        let seed = std::env::var("TRT_CACHE_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1);
        println!("TRT_CACHE_CRASH_SEED={seed}");
        Rng(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The model every child builds: the setup's small external-weights model, copied.
fn model_in(dir: &Path) -> PathBuf {
    for f in ["external_weights.onnx", "external_weights.bin"] {
        std::fs::copy(generated(&format!("models/test/{f}")), dir.join(f)).unwrap();
    }
    dir.join("external_weights.onnx")
}

fn profile(c: &mut BuilderConfig<'_>) -> trt::Result<()> {
    c.add_profile(ProfileSpec::new().with("x", ShapeRange::new(&[1, 64], &[4, 64], &[8, 64])))?;
    Ok(())
}

/// Starts this test again as the writer `role` on `dir`.
fn spawn_child(test: &str, role: &str, dir: &Path, model: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &libtest::exact_name(module_path!(), test), "--nocapture", "--test-threads=1"])
        .env(CHILD, role)
        .env("TRT_CACHE_CRASH_DIR", dir)
        .env("TRT_CACHE_CRASH_MODEL", model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The child's side, when this process is one: runs the writer and exits.
fn run_child_if_asked() -> bool {
    let Ok(role) = std::env::var(CHILD) else { return false };
    let dir = PathBuf::from(std::env::var_os("TRT_CACHE_CRASH_DIR").unwrap());
    let model = PathBuf::from(std::env::var_os("TRT_CACHE_CRASH_MODEL").unwrap());
    let builder = Builder::new().unwrap();
    match role.as_str() {
        // One get_or_build, as a first run does; the parent kills it somewhere.
        "engine" => {
            EngineCache::new(&dir).get_or_build(&builder, &model, profile).unwrap();
        }
        // A later run: what the cache gives it, written next to the cache folder.
        "reader" => {
            let (plan, outcome) = EngineCache::new(&dir).get_or_build(&builder, &model, profile).unwrap();
            let out = dir.with_extension("read");
            std::fs::write(out.with_extension("plan"), plan.as_bytes()).unwrap();
            std::fs::write(out.with_extension("outcome"), format!("{outcome:?}")).unwrap();
        }
        // Save a real timing cache over and over (what `trt build --timing-cache` does once).
        "timing" => {
            let mut config = builder.config().unwrap();
            profile(&mut config).unwrap();
            let cache = config.create_timing_cache(&[]).unwrap();
            config.set_timing_cache(cache, false).unwrap();
            let network = OnnxParser::parse_file(&builder, &model).unwrap();
            builder.build(&network, &config).unwrap();
            let cache = config.timing_cache().unwrap();
            std::fs::write(dir.join("reference.timing"), cache.serialize().unwrap()).unwrap();
            std::fs::write(dir.join("ready"), b"").unwrap();
            for _ in 0..1_000_000 {
                cache.save(dir.join("cache.timing")).unwrap();
            }
        }
        other => panic!("unknown child role {other}"),
    }
    true
}

fn temporaries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "tmp")).collect()
}

fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == ext)).collect()
}

/// Kills `child` at the moment `trigger` first holds (polled), or after `deadline`.
fn kill_when(child: &mut Child, deadline: Duration, mut trigger: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    let mut fired = false;
    while start.elapsed() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false; // finished before the kill point
        }
        if trigger() {
            fired = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    fired || start.elapsed() >= deadline
}

/// Makes every temporary file in `dir` older than the cleanup threshold, as if
/// the crash had happened minutes ago.
fn age_temporaries(dir: &Path) {
    let old = std::time::SystemTime::now() - Duration::from_secs(3600);
    for t in temporaries(dir) {
        std::fs::File::options().write(true).open(&t).unwrap().set_modified(old).unwrap();
    }
}

#[test]
fn engine_cache_entry_killed_mid_write_is_never_used() {
    if run_child_if_asked() {
        return;
    }
    const TEST: &str = "engine_cache_entry_killed_mid_write_is_never_used";
    let work = tempfile::tempdir().unwrap();
    let model = model_in(work.path());
    let builder = Builder::new().unwrap();
    // How long an uninterrupted child takes (random kill points fall inside it),
    // and the plan it stores. A fresh process builds the same bytes every time
    // (TensorRT numbers unnamed networks per process), so every later run, a
    // fresh process too, must return exactly these bytes, from the cache or rebuilt.
    let dir = work.path().join("cache");
    let start = Instant::now();
    assert!(spawn_child(TEST, "engine", &dir, &model).wait().unwrap().success());
    let full = start.elapsed();
    let reference = std::fs::read(&files_with(&dir, "plan")[0]).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let later_run = || {
        assert!(spawn_child(TEST, "reader", &dir, &model).wait().unwrap().success());
        let out = dir.with_extension("read");
        let plan = std::fs::read(out.with_extension("plan")).unwrap();
        let outcome = std::fs::read_to_string(out.with_extension("outcome")).unwrap();
        (plan, outcome)
    };

    let mut rng = Rng::from_env();
    let begun = Instant::now();
    let (mut kills, mut torn_left, mut plan_without_meta) = (0, 0, 0);
    for i in 0..KILLS {
        if begun.elapsed() > TIME_LIMIT {
            break;
        }
        let mut child = spawn_child(TEST, "engine", &dir, &model);
        // Aim: 0 = when the plan's temporary file appears, 1 = the metadata's, 2 = anywhere in the run.
        let aim = i % 3;
        let extra = Duration::from_micros(rng.below(3000));
        let killed = match aim {
            0 | 1 => {
                let want = if aim == 0 { ".plan." } else { ".json." };
                kill_when(&mut child, full * 3, || {
                    dir.exists() && temporaries(&dir).iter().any(|t| t.to_string_lossy().contains(want)) && {
                        std::thread::sleep(extra);
                        true
                    }
                })
            }
            _ => {
                let at = Duration::from_micros(rng.below(full.as_micros() as u64));
                kill_when(&mut child, at, || false)
            }
        };
        kills += usize::from(killed);
        std::fs::create_dir_all(&dir).unwrap();
        let had_meta = !files_with(&dir, "json").is_empty();
        torn_left += usize::from(!temporaries(&dir).is_empty());
        plan_without_meta += usize::from(!files_with(&dir, "plan").is_empty() && !had_meta);

        // The later run, in a process of its own.
        let (plan, outcome) = later_run();
        assert!(plan == reference, "kill {i}: a later run returned another plan than the complete one");
        // The metadata is renamed into place only after the whole plan: with it the entry is complete.
        let want = if had_meta { CacheOutcome::Hit } else { CacheOutcome::Built };
        assert_eq!(outcome, format!("{want:?}"), "kill {i}: metadata present: {had_meta}");
        let cache = EngineCache::new(&dir);
        let (_, again) = cache.get_or_build(&builder, &model, profile).unwrap();
        assert_eq!(again, CacheOutcome::Hit, "kill {i}: the rebuilt entry is complete");
        // What the killed writer left is removed once it is old enough to be abandoned.
        age_temporaries(&dir);
        for f in files_with(&dir, "plan").into_iter().chain(files_with(&dir, "json")) {
            std::fs::remove_file(f).unwrap();
        }
        cache.get_or_build(&builder, &model, profile).unwrap();
        assert!(temporaries(&dir).is_empty(), "kill {i}: abandoned temporary files remain: {:?}", temporaries(&dir));
        for f in files_with(&dir, "plan").into_iter().chain(files_with(&dir, "json")) {
            std::fs::remove_file(f).unwrap();
        }
    }
    println!(
        "engine cache: {kills} children killed mid-run (uninterrupted run {full:?}); {torn_left} left a torn temporary file, \
         {plan_without_meta} a plan without metadata; every later run returned the complete plan"
    );
    assert!(kills >= 3, "too few kills landed inside a run to say anything");
}

#[test]
fn timing_cache_killed_mid_save_is_whole_or_absent() {
    if run_child_if_asked() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let model = model_in(work.path());
    let builder = Builder::new().unwrap();
    let mut rng = Rng::from_env();
    let begun = Instant::now();
    let (mut kills, mut torn_left, mut present) = (0, 0, 0);
    for i in 0..KILLS {
        if begun.elapsed() > TIME_LIMIT {
            break;
        }
        let dir = work.path().join(format!("run{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = spawn_child("timing_cache_killed_mid_save_is_whole_or_absent", "timing", &dir, &model);
        // Wait for the child to be saving in a loop, then kill it within the next 50 ms.
        let ready = dir.join("ready");
        let wait = Instant::now();
        while !ready.exists() && wait.elapsed() < Duration::from_secs(30) && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(ready.exists(), "child {i} never got to saving");
        std::thread::sleep(Duration::from_micros(rng.below(50_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
        torn_left += usize::from(!temporaries(&dir).is_empty());

        // The later run reads the file as `trt build --timing-cache` does.
        let path = dir.join("cache.timing");
        if path.exists() {
            present += 1;
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(bytes, std::fs::read(dir.join("reference.timing")).unwrap(), "kill {i}: a torn timing cache");
            builder.config().unwrap().create_timing_cache(&bytes).unwrap();
        }
        // The next save cleans up what the killed one left, once it is old enough.
        age_temporaries(&dir);
        let config = builder.config().unwrap();
        config.create_timing_cache(&[]).unwrap().save(&path).unwrap();
        assert!(temporaries(&dir).is_empty(), "kill {i}: abandoned temporary files remain");
    }
    println!("timing cache: {kills} children killed while saving; {torn_left} left a torn temporary file; the cache file was whole in {present}, absent in the rest");
    assert!(kills >= 3, "too few kills to say anything");
}
