//! Build progress on stderr, fed by TensorRT's progress monitor
//! ([`trt::ProgressCallbacks`] through `BuilderConfig::set_progress`).
//!
//! A one-line bar redrawn in place when stderr is a terminal; one line per
//! phase with `--progress plain` (logs, tests); nothing with `--progress none`.
//! Written by hand rather than with indicatif: TensorRT reports nested phases
//! with step counts, which a dozen lines render, and the CLI keeps one
//! dependency fewer.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use clap::ValueEnum;

/// How build progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ProgressMode {
    /// A bar when stderr is a terminal, else nothing.
    #[default]
    Auto,
    /// A bar redrawn in place.
    Bar,
    /// One line per phase start and end.
    Plain,
    /// Nothing.
    None,
}

impl ProgressMode {
    /// `Auto` resolved against stderr.
    fn resolve(self) -> ProgressMode {
        match self {
            ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Bar,
            ProgressMode::Auto => ProgressMode::None,
            other => other,
        }
    }

    /// Callbacks for `BuilderConfig::set_progress`, or `None` when nothing is
    /// shown. `label` starts each line (e.g. `"fp16 "`, or empty).
    pub fn callbacks(self, label: &str) -> Option<Box<dyn trt::ProgressCallbacks>> {
        match self.resolve() {
            ProgressMode::None | ProgressMode::Auto => None,
            mode => Some(Box::new(Progress {
                bar: mode == ProgressMode::Bar,
                label: label.to_owned(),
                start: Instant::now(),
                last_draw: None,
                phases: Vec::new(),
            })),
        }
    }
}

struct Phase {
    name: String,
    steps: i32,
    done: i32,
}

struct Progress {
    bar: bool,
    label: String,
    start: Instant,
    last_draw: Option<Instant>,
    phases: Vec<Phase>,
}

const BAR_WIDTH: usize = 24;

impl Progress {
    fn elapsed(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    fn draw(&mut self, force: bool) {
        let now = Instant::now();
        if !force && self.last_draw.is_some_and(|t| now - t < Duration::from_millis(50)) {
            return;
        }
        self.last_draw = Some(now);
        let Some(top) = self.phases.first() else {
            eprint!("\r\x1b[2K");
            return;
        };
        let fraction = if top.steps > 0 { (top.done as f64 / top.steps as f64).clamp(0.0, 1.0) } else { 0.0 };
        let filled = (fraction * BAR_WIDTH as f64).round() as usize;
        // The outermost phase (what the bar measures) and the innermost (what runs now).
        let show = |p: &Phase| {
            if p.steps > 0 {
                format!("{} {}/{}", p.name, p.done, p.steps)
            } else {
                p.name.clone()
            }
        };
        let mut path = vec![show(top)];
        if self.phases.len() > 2 {
            path.push("…".into());
        }
        if let Some(inner) = self.phases.last().filter(|_| self.phases.len() > 1) {
            path.push(show(inner));
        }
        let mut line = format!(
            "{}[{}{}] {:5.1} s  {}",
            self.label,
            "=".repeat(filled),
            " ".repeat(BAR_WIDTH - filled),
            self.elapsed(),
            path.join(" > ")
        );
        // Keep to one terminal line so `\r` redraws it.
        if line.chars().count() > 118 {
            line = line.chars().take(117).collect::<String>() + "…";
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }
}

impl trt::ProgressCallbacks for Progress {
    fn phase_start(&mut self, phase: &str, _parent: &str, steps: i32) {
        if !self.bar {
            let indent = "  ".repeat(self.phases.len());
            eprintln!("[{:6.2} s] {}{indent}{phase} ({steps} steps)", self.elapsed(), self.label);
        }
        self.phases.push(Phase { name: phase.to_owned(), steps, done: 0 });
        if self.bar {
            self.draw(true);
        }
    }

    fn step_complete(&mut self, phase: &str, step: i32) -> bool {
        if let Some(p) = self.phases.iter_mut().rev().find(|p| p.name == phase) {
            p.done = step + 1;
        }
        if self.bar {
            self.draw(false);
        }
        true
    }

    fn phase_finish(&mut self, phase: &str) {
        if let Some(i) = self.phases.iter().rposition(|p| p.name == phase) {
            self.phases.truncate(i);
        }
        if self.bar {
            self.draw(true);
        } else {
            let indent = "  ".repeat(self.phases.len());
            eprintln!("[{:6.2} s] {}{indent}{phase} done", self.elapsed(), self.label);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.bar {
            eprint!("\r\x1b[2K");
        }
    }
}
