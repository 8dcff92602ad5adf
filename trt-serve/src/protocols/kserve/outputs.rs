//! Which outputs a KServe v2 request asks for, checked against the model's.

use super::RequestedOutput;
use crate::error::{ServeError, ServeResult};

/// The outputs a request asks for as `(name, binary, classification)`, in
/// its order (none asked: every output the model exposes), each checked
/// against `exposed`.
pub(crate) fn wanted_outputs(
    model: &str,
    requested: &[RequestedOutput],
    binary_data_output: bool,
    exposed: &[&str],
) -> ServeResult<Vec<(String, bool, Option<usize>)>> {
    let wanted: Vec<(String, bool, Option<usize>)> = if requested.is_empty() {
        exposed.iter().map(|o| (o.to_string(), binary_data_output, None)).collect()
    } else {
        requested.iter().map(|o| (o.name.clone(), o.binary || binary_data_output, o.classification)).collect()
    };
    if let Some((name, _, _)) = wanted.iter().find(|(name, _, _)| !exposed.contains(&name.as_str())) {
        return Err(ServeError::invalid(format!("unknown output '{name}' of model '{model}'")));
    }
    Ok(wanted)
}
