//! The KServe v2 `infer` method for a tensor model: the request's tensors
//! checked against the config ([`crate::models::tensor_model`]), run through the
//! version's queue ([`crate::models::tensor_dispatch`]), and the outputs asked for
//! encoded in the model's own element types (or as top-k classes).

use std::time::Instant;

use crate::error::ServeResult;
use crate::models::repository::ServedVersion;
use crate::models::tensor_dispatch::TensorDispatcher;
use crate::models::tensor_model::{float_values, output_data};
use crate::observability::metrics::Phases;
use crate::protocols::kserve::wanted_outputs;
use crate::protocols::kserve::{classification, InferRequest, InferResponse, OutputTensor};

/// Runs `request` on the tensor model `served` (whose dispatcher is `dispatcher`).
pub(crate) async fn infer(
    served: &ServedVersion,
    dispatcher: &TensorDispatcher,
    request: InferRequest,
) -> ServeResult<(InferResponse, Phases)> {
    let model = dispatcher.model();
    let checking = Instant::now();
    let tensors = model.request_tensors(request.inputs)?;
    let exposed: Vec<&str> = model.output_names().collect();
    // Which outputs, in which encoding, checked before any work is done.
    let wanted = wanted_outputs(&served.config.name, &request.outputs, request.binary_data_output, &exposed)?;
    let compute_input = checking.elapsed();
    let rows = tensors.rows;
    let ran = dispatcher.run(rows, tensors.tensors, request.timeout_us).await?;
    let building = Instant::now();
    let mut outputs = Vec::with_capacity(wanted.len());
    for (name, binary, classify) in wanted {
        let i = exposed.iter().position(|n| *n == name).expect("wanted_outputs checked the name");
        let t = &ran.outputs[i];
        let (shape, data) = match classify {
            Some(k) => classification::classify(&name, &float_values(&name, t)?, t.shape(), k, None)?,
            None => (t.shape().to_vec(), output_data(t)),
        };
        outputs.push(OutputTensor { name, shape, data, binary });
    }
    let response =
        InferResponse { model_name: served.config.name.clone(), model_version: served.version.to_string(), id: request.id, outputs };
    let phases = Phases {
        rows: rows as u64,
        // The dispatcher counts batches; the metrics follow its count.
        executions: 0,
        queue: ran.queue,
        compute_input,
        compute_infer: ran.compute,
        compute_output: building.elapsed(),
    };
    Ok((response, phases))
}
