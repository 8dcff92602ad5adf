//! What `trt compare` reports: one row of figures per output (and, with
//! `--layers`, per intermediate tensor), the gate each row breaks, and the
//! first intermediate tensor that diverges. Printed as a text table, or as
//! one JSON document with `--json` (the same fields).
//!
//! | figure | meaning |
//! |---|---|
//! | `max_abs` | largest \|reference - checked\| |
//! | `max_rel` | largest relative error where the reference is above 1e-3 |
//! | `cosine_min` / `cosine_mean` | row cosines (rows: the last axis; padding skipped) |
//! | `argmax_agreement` | rank-2 outputs: share of rows whose argmax agrees |
//! | `embedding_cosine_*` | rank-3 outputs with a mask: the mean-pooled sentence embedding's cosine |

use serde::Serialize;
use trt_onnx::compare::Metrics;

use crate::output::Table;

/// The gate: tolerances from the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gate {
    /// `--atol`.
    pub atol: Option<f64>,
    /// `--rtol`.
    pub rtol: Option<f64>,
    /// `--min-cosine`.
    pub min_cosine: Option<f64>,
}

/// The row cosine under which an intermediate tensor counts as diverged when
/// no tolerance is given.
pub const DEFAULT_LAYER_COSINE: f64 = 0.999;

impl Gate {
    /// Which tolerance `m` breaks, if any.
    pub fn violation(&self, m: &Metrics) -> Option<String> {
        if let Some(t) = self.atol.filter(|t| m.max_abs > *t) {
            return Some(format!("max abs error {:.3e} > --atol {t:e}", m.max_abs));
        }
        if let Some(t) = self.rtol.filter(|t| m.max_rel > *t) {
            return Some(format!("max relative error {:.3e} > --rtol {t:e}", m.max_rel));
        }
        if let Some(t) = self.min_cosine.filter(|t| m.cosine_min < *t) {
            return Some(format!("min cosine {:.6} < --min-cosine {t}", m.cosine_min));
        }
        None
    }

    /// For intermediate tensors: the tolerances, or a row cosine of
    /// [`DEFAULT_LAYER_COSINE`] when none is given.
    pub fn layer_violation(&self, m: &Metrics) -> Option<String> {
        if self.atol.is_none() && self.rtol.is_none() && self.min_cosine.is_none() {
            return (m.cosine_min < DEFAULT_LAYER_COSINE).then(|| format!("min cosine {:.6} < {DEFAULT_LAYER_COSINE}", m.cosine_min));
        }
        self.violation(m)
    }

    /// The gate in words, for the report.
    pub fn describe(&self, layers: bool) -> String {
        let mut parts = Vec::new();
        if let Some(t) = self.atol {
            parts.push(format!("max_abs <= {t:e}"));
        }
        if let Some(t) = self.rtol {
            parts.push(format!("max_rel <= {t:e}"));
        }
        if let Some(t) = self.min_cosine {
            parts.push(format!("cosine_min >= {t}"));
        }
        match (parts.is_empty(), layers) {
            (true, true) => format!("cosine_min >= {DEFAULT_LAYER_COSINE} (no tolerance given)"),
            (true, false) => "none (figures only)".into(),
            _ => parts.join(", "),
        }
    }
}

/// One side of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    /// The model or plan file.
    pub path: String,
    /// What executed it: `onnxruntime (cpu)`, `tensorrt (NVIDIA ... )`.
    pub backend: String,
}

/// One tensor's figures and the tolerance it breaks.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// The tensor.
    pub name: String,
    /// Its shape on the reference side, in the last batch compared.
    pub shape: Vec<usize>,
    /// Largest |reference - checked|.
    pub max_abs: f64,
    /// Largest relative error.
    pub max_rel: f64,
    /// Smallest row cosine.
    pub cosine_min: f64,
    /// Mean row cosine.
    pub cosine_mean: f64,
    /// Share of rows whose argmax agrees (rank 2).
    pub argmax_agreement: Option<f64>,
    /// Smallest mean-pooled embedding cosine (rank 3 with a mask).
    pub embedding_cosine_min: Option<f64>,
    /// Mean mean-pooled embedding cosine.
    pub embedding_cosine_mean: Option<f64>,
    /// Rows compared.
    pub rows: usize,
    /// The tolerance broken, if any.
    pub violation: Option<String>,
}

impl Figures {
    /// Figures of `name` from `m`, with the violation (if any).
    pub fn new(name: &str, shape: &[usize], m: &Metrics, violation: Option<String>) -> Self {
        Figures {
            name: name.to_owned(),
            shape: shape.to_vec(),
            max_abs: m.max_abs,
            max_rel: m.max_rel,
            cosine_min: m.cosine_min,
            cosine_mean: m.cosine_mean,
            argmax_agreement: m.argmax_agreement,
            embedding_cosine_min: m.embedding_cosine.map(|e| e.0),
            embedding_cosine_mean: m.embedding_cosine.map(|e| e.1),
            rows: m.rows,
            violation,
        }
    }

    /// The figures on one line: `max_abs 1.2e-3  max_rel ...`.
    pub fn line(&self) -> String {
        let mut s = format!(
            "max_abs {:.3e}  max_rel {:.3e}  cosine min {:.6} mean {:.6}",
            self.max_abs, self.max_rel, self.cosine_min, self.cosine_mean
        );
        if let Some(a) = self.argmax_agreement {
            s.push_str(&format!("  argmax agreement {a:.4}"));
        }
        if let (Some(lo), Some(mean)) = (self.embedding_cosine_min, self.embedding_cosine_mean) {
            s.push_str(&format!("  embedding cosine min {lo:.6} mean {mean:.6}"));
        }
        s
    }
}

/// A tensor `--layers` could not compare, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The tensor.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// What `--layers` found.
#[derive(Debug, Clone, Serialize)]
pub struct Layers {
    /// The gate applied to each tensor.
    pub gate: String,
    /// How the TensorRT side got its intermediate tensors, when one side is a plan.
    pub tensorrt_rebuild: Option<String>,
    /// Intermediate tensors both sides produce, in the reference's topological order.
    pub matched: usize,
    /// The first of them beyond the gate.
    pub first_divergence: Option<Figures>,
    /// Every tensor compared, in order.
    pub tensors: Vec<Figures>,
    /// Tensors matched by name but not comparable.
    pub skipped: Vec<Skipped>,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The reference side (ONNX Runtime where one side is a plan).
    pub reference: SideInfo,
    /// The side checked against it.
    pub checked: SideInfo,
    /// Rows compared.
    pub rows: usize,
    /// Batches run.
    pub batches: usize,
    /// The gate on the outputs.
    pub gate: String,
    /// Outputs both sides have, in the reference's order.
    pub outputs: Vec<Figures>,
    /// `--layers`.
    pub layers: Option<Layers>,
    /// The first output beyond the gate, as the error line says it (exit 1).
    pub failure: Option<String>,
}

impl Report {
    /// The first output that breaks the gate, as `output 'NAME': WHY`.
    pub fn first_failure(outputs: &[Figures]) -> Option<String> {
        outputs.iter().find_map(|f| f.violation.as_ref().map(|v| format!("output '{}': {v}", f.name)))
    }

    /// The report as one JSON document.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a compare report serializes");
        s.push('\n');
        s
    }

    /// The report as text: a header, a table of the outputs, the layers' verdict.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{} ({}) vs {} ({}): {} rows in {} batches\n",
            self.reference.path, self.reference.backend, self.checked.path, self.checked.backend, self.rows, self.batches
        );
        s.push_str(&format!("  gate: {}\n", self.gate));
        s.push_str(&table(&self.outputs).render("  "));
        if let Some(l) = &self.layers {
            if let Some(how) = &l.tensorrt_rebuild {
                s.push_str(&format!("layers: {how}\n"));
            }
            s.push_str(&match (&l.first_divergence, l.matched) {
                (_, 0) => "layers: the two sides share no intermediate float tensor names\n".to_owned(),
                (Some(f), n) => format!(
                    "layers: {n} tensors compared, gate {}; first divergence at '{}': {} ({})\n",
                    l.gate,
                    f.name,
                    f.violation.as_deref().unwrap_or(""),
                    f.line()
                ),
                (None, n) => format!("layers: {n} tensors compared, gate {}; none diverges beyond tolerance\n", l.gate),
            });
            // Where it happens: the tensors just before the first divergence, and it.
            if let Some(at) = l.first_divergence.as_ref().and_then(|f| l.tensors.iter().position(|t| t.name == f.name)) {
                s.push_str(&table(&l.tensors[at.saturating_sub(LEAD_IN)..=at]).render("  "));
            }
            if !l.skipped.is_empty() {
                let names: Vec<&str> = l.skipped.iter().take(5).map(|k| k.name.as_str()).collect();
                s.push_str(&format!(
                    "layers: {} matched tensors not compared (e.g. {}: {}); --json lists them\n",
                    l.skipped.len(),
                    names.join(", "),
                    l.skipped[0].reason
                ));
            }
        }
        s
    }
}

/// How many tensors before the first divergence the text shows.
const LEAD_IN: usize = 3;

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// One row per tensor.
fn table(rows: &[Figures]) -> Table {
    let mut t = Table::new(&["tensor", "max_abs", "max_rel", "cosine min", "cosine mean", "argmax", "emb cosine min", "verdict"]);
    for f in rows {
        t.row(vec![
            f.name.clone(),
            format!("{:.3e}", f.max_abs),
            format!("{:.3e}", f.max_rel),
            format!("{:.6}", f.cosine_min),
            format!("{:.6}", f.cosine_mean),
            opt(f.argmax_agreement, 4),
            opt(f.embedding_cosine_min, 6),
            f.violation.clone().unwrap_or_else(|| "ok".into()),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(max_abs: f64, cosine_min: f64) -> Metrics {
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[1, 2]), vec![1.0f32, 0.0]).unwrap();
        let mut m = trt_onnx::compare::compare("t", &a, &a, None).unwrap();
        m.max_abs = max_abs;
        m.cosine_min = cosine_min;
        m
    }

    #[test]
    fn gates_name_the_tolerance_broken_and_layers_default_to_a_cosine() {
        let gate = Gate { atol: Some(1e-3), ..Gate::default() };
        assert_eq!(gate.violation(&metrics(1e-4, 0.5)), None);
        assert!(gate.violation(&metrics(2e-3, 1.0)).unwrap().contains("--atol"));
        let none = Gate::default();
        assert_eq!(none.violation(&metrics(9.0, 0.0)), None, "no tolerance, no output gate");
        assert!(none.layer_violation(&metrics(0.0, 0.99)).unwrap().contains("< 0.999"));
        assert_eq!(none.layer_violation(&metrics(9.0, 0.9999)), None);
        assert_eq!(none.describe(false), "none (figures only)");
        assert!(gate.describe(true).contains("max_abs <= 1e-3"), "{}", gate.describe(true));
    }

    #[test]
    fn text_and_json_say_the_same() {
        let out = Figures::new("logits", &[2, 2], &metrics(2e-3, 1.0), Some("max abs error 2.000e-3 > --atol 1e-3".into()));
        let layer = Figures::new("h", &[2, 4], &metrics(0.0, 0.9), Some("min cosine 0.900000 < 0.999".into()));
        let report = Report {
            reference: SideInfo { path: "a.onnx".into(), backend: "onnxruntime (cpu)".into() },
            checked: SideInfo { path: "b.plan".into(), backend: "tensorrt".into() },
            rows: 2,
            batches: 1,
            gate: "max_abs <= 1e-3".into(),
            failure: Report::first_failure(std::slice::from_ref(&out)),
            outputs: vec![out],
            layers: Some(Layers {
                gate: "cosine_min >= 0.999".into(),
                tensorrt_rebuild: None,
                matched: 1,
                first_divergence: Some(layer.clone()),
                tensors: vec![layer],
                skipped: vec![],
            }),
        };
        assert_eq!(report.failure.as_deref(), Some("output 'logits': max abs error 2.000e-3 > --atol 1e-3"));
        let text = report.to_text();
        assert!(text.starts_with("a.onnx (onnxruntime (cpu)) vs b.plan (tensorrt): 2 rows in 1 batches\n"), "{text}");
        assert!(text.contains("logits  2.000e-3"), "{text}");
        assert!(text.contains("first divergence at 'h': min cosine 0.900000 < 0.999"), "{text}");
        assert!(text.trim_end().ends_with("min cosine 0.900000 < 0.999"), "the divergent tensor's row closes the text: {text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["outputs"][0]["name"], "logits");
        assert_eq!(json["layers"]["first_divergence"]["name"], "h");
        assert_eq!(json["failure"], "output 'logits': max abs error 2.000e-3 > --atol 1e-3");
    }
}
