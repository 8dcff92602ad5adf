//! `trt bench` flags of the TensorRT tooling: `--profile-layers` (a separate
//! profiling pass after the timed loop, as trtexec's `--separateProfileRun`,
//! so reporting does not slow the timed iterations) and `--weight-budget`
//! (weight streaming, set on the engine before its context is created).
//!
//! The per-layer table joins the profiler's times with the engine
//! inspector's layer descriptions (type and precision need a plan built with
//! `trt build --detailed-layers`; otherwise those columns say `-`). Its JSON
//! follows trtexec's `--dumpProfile --exportProfile`: a count, then one entry
//! per layer with `name`, `timeMs`, `averageMs`, `medianMs`, `percentage`.

use serde_json::{json, Value};
use trt::{Engine, EngineInfo, ExecutionContext, LayerTime, LayerTimes, Profiler};

use crate::error::{CliError, Result};
use crate::output::Table;

/// The flags, flattened into `trt bench`'s arguments.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Flags {
    /// After the timed loop, run N more iterations with TensorRT's per-layer
    /// profiler and print each layer's median time and share [default N: 50].
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "50",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub profile_layers: Option<u32>,

    /// Weight streaming: keep at most this many bytes of weights on the GPU
    /// (a plan built with weight streaming; `auto` lets TensorRT choose, a
    /// suffix K/M/G means KiB/MiB/GiB).
    #[arg(long, value_name = "BYTES|auto", value_parser = parse_budget)]
    pub weight_budget: Option<WeightBudget>,
}

/// `--weight-budget`'s value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightBudget {
    /// TensorRT's automatic budget (`getWeightStreamingAutomaticBudget`).
    Auto,
    /// This many bytes.
    Bytes(u64),
}

fn parse_budget(s: &str) -> std::result::Result<WeightBudget, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(WeightBudget::Auto);
    }
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit.to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return Err(format!("'{s}' is not a byte count (e.g. 512M, 2G, 1073741824 or auto)")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("'{s}' is not a byte count (e.g. 512M, 2G, 1073741824 or auto)"))?;
    n.checked_mul(1 << shift).map(WeightBudget::Bytes).ok_or_else(|| format!("'{s}' is too large"))
}

/// Before the context is created: apply `--weight-budget`; returns a note for the report.
pub fn before_context(flags: &Flags, engine: &Engine) -> Result<Option<String>> {
    let Some(budget) = flags.weight_budget else { return Ok(None) };
    let streamable = engine.streamable_weights_size()?;
    if streamable == 0 {
        return Err(CliError::new(
            "--weight-budget needs a plan built with weight streaming (trt build --weight-streaming); this plan streams no weights",
        ));
    }
    let bytes = match budget {
        WeightBudget::Auto => engine.weight_streaming_automatic_budget()?,
        WeightBudget::Bytes(b) => b,
    };
    engine.set_weight_streaming_budget(bytes)?;
    let note = format!(
        "weight streaming: budget {} of {} streamable bytes, {} bytes of scratch per context",
        engine.weight_streaming_budget()?,
        streamable,
        engine.weight_streaming_scratch_memory_size()?
    );
    eprintln!("note: {note}");
    Ok(Some(note))
}

/// The profiling pass: `run_once` enqueues one iteration and waits for it.
pub fn profile(
    flags: &Flags,
    context: &mut ExecutionContext,
    mut run_once: impl FnMut(&mut ExecutionContext) -> Result<()>,
) -> Result<Option<Vec<LayerTime>>> {
    let Some(iterations) = flags.profile_layers else { return Ok(None) };
    let times = LayerTimes::new();
    context.set_profiler(Profiler::new(Box::new(times.clone()))?)?;
    context.set_enqueue_emits_profile(false)?;
    for _ in 0..iterations {
        run_once(context)?;
        context.report_to_profiler()?;
    }
    context.clear_profiler()?;
    Ok(Some(times.summary()))
}

/// Add the per-layer times to bench's JSON document and text report.
pub fn extend_report(layers: Option<&[LayerTime]>, engine: &Engine, doc: &mut Value, text: &mut String) {
    let Some(layers) = layers else { return };
    // Type and precision are extras: a plan without inspector details still gets its times.
    let info = engine.layer_info().ok();
    if let Some(fields) = doc.as_object_mut() {
        fields.insert("layers".into(), json(layers, info.as_ref()));
    }
    let iterations = layers.iter().map(|l| l.count).max().unwrap_or(0);
    text.push_str(&format!("  per layer ({iterations} profiled iterations, TensorRT's IProfiler):\n"));
    text.push_str(&table(layers, info.as_ref()).render("    "));
}

/// One table row per layer: name, type, precision, median, share.
pub fn table(layers: &[LayerTime], info: Option<&EngineInfo>) -> Table {
    let mut table = Table::new(&["layer", "type", "precision", "median ms", "share"]);
    for l in layers {
        let described = info.and_then(|i| i.layer(&l.name));
        table.row(vec![
            l.name.clone(),
            described.and_then(|d| d.layer_type()).unwrap_or("-").to_owned(),
            described.and_then(|d| d.precision()).unwrap_or_else(|| "-".to_owned()),
            format!("{:.4}", l.median_ms),
            format!("{:.1}%", l.percent),
        ]);
    }
    table
}

/// trtexec's `--exportProfile` layout, with type and precision where known.
pub fn json(layers: &[LayerTime], info: Option<&EngineInfo>) -> Value {
    let count = layers.iter().map(|l| l.count).max().unwrap_or(0);
    let mut doc = vec![json!({ "count": count })];
    doc.extend(layers.iter().map(|l| {
        let described = info.and_then(|i| i.layer(&l.name));
        json!({
            "name": l.name,
            "timeMs": l.total_ms,
            "averageMs": l.mean_ms,
            "medianMs": l.median_ms,
            "percentage": l.percent,
            "layerType": described.and_then(|d| d.layer_type()),
            "precision": described.and_then(|d| d.precision()),
        })
    }));
    Value::Array(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(name: &str, median: f64, percent: f64) -> LayerTime {
        LayerTime { name: name.into(), count: 4, total_ms: median * 4.0, mean_ms: median, median_ms: median, percent }
    }

    #[test]
    fn budgets_parse_with_units() {
        assert_eq!(parse_budget("auto"), Ok(WeightBudget::Auto));
        assert_eq!(parse_budget("1024"), Ok(WeightBudget::Bytes(1024)));
        assert_eq!(parse_budget("512M"), Ok(WeightBudget::Bytes(512 << 20)));
        assert_eq!(parse_budget("2GiB"), Ok(WeightBudget::Bytes(2 << 30)));
        for bad in ["", "x", "12Q", "-1", "99999999999999999999G"] {
            assert!(parse_budget(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn table_and_json_join_times_with_the_inspector() {
        let info = EngineInfo::parse(
            r#"{"Layers": [{"Name": "mm", "LayerType": "gemm", "Outputs": [{"Name": "y", "Format/Datatype": "Row major linear FP16"}]}],
                "Bindings": []}"#,
        )
        .unwrap();
        let layers = [layer("mm", 0.5, 75.0), layer("other", 0.25, 25.0)];
        let text = table(&layers, Some(&info)).render("");
        assert!(text.lines().any(|l| l.starts_with("mm") && l.contains("gemm") && l.contains("FP16") && l.contains("75.0%")), "{text}");
        assert!(text.lines().any(|l| l.starts_with("other") && l.contains(" - ")), "{text}");
        let doc = json(&layers, Some(&info));
        assert_eq!(doc[0]["count"], 4);
        assert_eq!(doc[1]["name"], "mm");
        assert_eq!(doc[1]["medianMs"], 0.5);
        assert_eq!(doc[1]["precision"], "FP16");
        assert_eq!(doc[2]["layerType"], Value::Null);
    }
}
