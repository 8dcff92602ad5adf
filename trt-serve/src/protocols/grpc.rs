//! The gRPC front end: `inference.GRPCInferenceService` (tonic), with
//! `raw_input_contents` / `raw_output_contents` and typed `contents`. The
//! messages come from `proto/inference.proto`, compiled at build time.

use std::collections::HashMap;
use std::sync::Arc;

use tonic::{Request, Response, Status};

use crate::config::{ModelConfig, TimeoutAction, VersionPolicy};
use crate::error::{ServeError, ServeResult};
use crate::protocols::kserve::{
    element_count, elements_from_raw, shape_from_wire, DataType, Elements, InferRequest, InputTensor, RequestedOutput,
};
use crate::protocols::service::{Service, EXTENSIONS, SERVER_NAME};

/// The generated protocol types and service trait.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("inference");
}

use proto::grpc_inference_service_server::{GrpcInferenceService, GrpcInferenceServiceServer};
use proto::infer_parameter::ParameterChoice;
use proto::*;

/// The tonic service over `service`, with the body limit applied to messages.
pub fn server(service: Arc<Service>) -> GrpcInferenceServiceServer<Grpc> {
    let limit = service.repository.limits().max_body_bytes;
    GrpcInferenceServiceServer::new(Grpc { service }).max_decoding_message_size(limit).max_encoding_message_size(usize::MAX)
}

/// The gRPC handlers.
#[derive(Debug, Clone)]
pub struct Grpc {
    service: Arc<Service>,
}

fn opt(v: &str) -> Option<&str> {
    (!v.is_empty()).then_some(v)
}

fn uint_param(params: &HashMap<String, InferParameter>, key: &str) -> ServeResult<Option<u64>> {
    match params.get(key).and_then(|p| p.parameter_choice.as_ref()) {
        None => Ok(None),
        Some(ParameterChoice::Uint64Param(v)) => Ok(Some(*v)),
        Some(ParameterChoice::Int64Param(v)) if *v >= 0 => Ok(Some(*v as u64)),
        Some(other) => Err(ServeError::invalid(format!("parameter '{key}' must be a non-negative integer, found {other:?}"))),
    }
}

fn typed_contents(name: &str, datatype: DataType, count: usize, c: InferTensorContents) -> ServeResult<Elements> {
    let mismatch = |n: usize| ServeError::invalid(format!("input '{name}': {n} elements in contents, the shape needs {count}"));
    fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    let (n, elements) = match datatype {
        DataType::Bytes => (c.bytes_contents.len(), Elements::Bytes(c.bytes_contents)),
        DataType::Bool => (c.bool_contents.len(), Elements::Fixed(c.bool_contents.iter().map(|&b| b as u8).collect())),
        DataType::Int32 => (c.int_contents.len(), Elements::Fixed(le(&c.int_contents, i32::to_le_bytes))),
        DataType::Int64 => (c.int64_contents.len(), Elements::Fixed(le(&c.int64_contents, i64::to_le_bytes))),
        DataType::Uint32 => (c.uint_contents.len(), Elements::Fixed(le(&c.uint_contents, u32::to_le_bytes))),
        DataType::Uint64 => (c.uint64_contents.len(), Elements::Fixed(le(&c.uint64_contents, u64::to_le_bytes))),
        DataType::Fp32 => (c.fp32_contents.len(), Elements::Fixed(le(&c.fp32_contents, f32::to_le_bytes))),
        DataType::Fp64 => (c.fp64_contents.len(), Elements::Fixed(le(&c.fp64_contents, f64::to_le_bytes))),
        other => return Err(ServeError::invalid(format!("input '{name}': {} data must be sent in raw_input_contents", other.as_str()))),
    };
    if n != count {
        return Err(mismatch(n));
    }
    Ok(elements)
}

/// Converts a gRPC request into the protocol-independent form.
pub fn decode_request(r: ModelInferRequest, limits: &crate::transport::limits::Limits) -> ServeResult<InferRequest> {
    if !r.raw_input_contents.is_empty() && r.raw_input_contents.len() != r.inputs.len() {
        return Err(ServeError::invalid(format!(
            "{} raw_input_contents for {} inputs: send raw contents for every input or for none",
            r.raw_input_contents.len(),
            r.inputs.len()
        )));
    }
    let mut raw = r.raw_input_contents.into_iter();
    let mut inputs = Vec::with_capacity(r.inputs.len());
    for t in r.inputs {
        let datatype = DataType::parse(&t.datatype)?;
        let shape = shape_from_wire(&t.name, &t.shape)?;
        let count = element_count(&t.name, &shape, limits)?;
        let data = match (raw.next(), t.contents) {
            (Some(_), Some(_)) => return Err(ServeError::invalid(format!("input '{}' has both contents and raw_input_contents", t.name))),
            (Some(bytes), None) => elements_from_raw(&t.name, datatype, count, bytes.to_vec())?,
            (None, Some(c)) => typed_contents(&t.name, datatype, count, c)?,
            (None, None) => typed_contents(&t.name, datatype, count, InferTensorContents::default())?,
        };
        inputs.push(InputTensor { name: t.name, datatype, shape, data });
    }
    let outputs = r
        .outputs
        .into_iter()
        .map(|o| {
            let classification = uint_param(&o.parameters, "classification")?.map(|k| k as usize).filter(|&k| k > 0);
            Ok(RequestedOutput { name: o.name, binary: false, classification })
        })
        .collect::<ServeResult<_>>()?;
    Ok(InferRequest {
        id: r.id,
        inputs,
        outputs,
        binary_data_output: false,
        priority: uint_param(&r.parameters, "priority")?.unwrap_or(0),
        timeout_us: uint_param(&r.parameters, "timeout")?,
    })
}

fn config_proto(c: &ModelConfig) -> proto::ModelConfig {
    let tensor_in =
        |t: &crate::config::TensorConfig| ModelInput { name: t.name.clone(), data_type: t.data_type.proto_number(), dims: t.dims.clone() };
    let tensor_out =
        |t: &crate::config::TensorConfig| ModelOutput { name: t.name.clone(), data_type: t.data_type.proto_number(), dims: t.dims.clone() };
    use model_version_policy::PolicyChoice;
    let policy = match &c.version_policy {
        VersionPolicy::Latest(n) => PolicyChoice::Latest(model_version_policy::Latest { num_versions: *n as u32 }),
        VersionPolicy::All => PolicyChoice::All(model_version_policy::All {}),
        VersionPolicy::Specific(v) => {
            PolicyChoice::Specific(model_version_policy::Specific { versions: v.iter().map(|&x| x as i64).collect() })
        }
    };
    let batching = c.dynamic_batching.as_ref().map(|db| {
        let q = &db.default_queue_policy;
        model_config::SchedulingChoice::DynamicBatching(ModelDynamicBatching {
            preferred_batch_size: db.preferred_batch_size.iter().map(|&p| p as i32).collect(),
            max_queue_delay_microseconds: db.max_queue_delay.as_micros() as u64,
            preserve_ordering: false,
            priority_levels: db.priority_levels,
            default_priority_level: db.default_priority_level,
            default_queue_policy: Some(ModelQueuePolicy {
                timeout_action: match q.timeout_action {
                    TimeoutAction::Reject => model_queue_policy::TimeoutAction::Reject as i32,
                    TimeoutAction::Delay => model_queue_policy::TimeoutAction::Delay as i32,
                },
                default_timeout_microseconds: q.default_timeout.map_or(0, |d| d.as_micros() as u64),
                allow_timeout_override: q.allow_timeout_override,
                max_queue_size: q.max_queue_size as u32,
            }),
        })
    });
    proto::ModelConfig {
        name: c.name.clone(),
        platform: c.platform.as_str().into(),
        backend: c.platform.backend_name().into(),
        version_policy: Some(ModelVersionPolicy { policy_choice: Some(policy) }),
        max_batch_size: c.max_batch_size as i32,
        input: c.inputs.iter().map(tensor_in).collect(),
        output: c.outputs.iter().map(tensor_out).collect(),
        instance_group: c
            .reported_instance_groups()
            .iter()
            .enumerate()
            .map(|(i, g)| ModelInstanceGroup {
                name: format!("{}_{i}", c.name),
                count: g.count as i32,
                gpus: g.gpus.iter().map(|&g| g as i32).collect(),
                kind: match g.kind {
                    crate::config::InstanceKind::Cpu => model_instance_group::Kind::Cpu,
                    crate::config::InstanceKind::Gpu => model_instance_group::Kind::Gpu,
                    _ => model_instance_group::Kind::Auto,
                } as i32,
            })
            .collect(),
        scheduling_choice: batching,
        parameters: c.parameters.iter().map(|(k, v)| (k.clone(), proto::ModelParameter { string_value: v.clone() })).collect(),
    }
}

type Reply<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl GrpcInferenceService for Grpc {
    async fn server_live(&self, _: Request<ServerLiveRequest>) -> Reply<ServerLiveResponse> {
        Ok(Response::new(ServerLiveResponse { live: self.service.live() }))
    }

    async fn server_ready(&self, _: Request<ServerReadyRequest>) -> Reply<ServerReadyResponse> {
        Ok(Response::new(ServerReadyResponse { ready: self.service.ready() }))
    }

    async fn model_ready(&self, r: Request<ModelReadyRequest>) -> Reply<ModelReadyResponse> {
        let r = r.into_inner();
        Ok(Response::new(ModelReadyResponse { ready: self.service.model_ready(&r.name, opt(&r.version)) }))
    }

    async fn server_metadata(&self, _: Request<ServerMetadataRequest>) -> Reply<ServerMetadataResponse> {
        Ok(Response::new(ServerMetadataResponse {
            name: SERVER_NAME.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: EXTENSIONS.iter().map(|e| e.to_string()).collect(),
        }))
    }

    async fn model_metadata(&self, r: Request<ModelMetadataRequest>) -> Reply<ModelMetadataResponse> {
        let r = r.into_inner();
        let m = self.service.model_metadata(&r.name, opt(&r.version))?;
        let t = |v: Vec<crate::protocols::service::TensorMetadata>| {
            v.into_iter()
                .map(|t| model_metadata_response::TensorMetadata { name: t.name, datatype: t.datatype.into(), shape: t.shape })
                .collect()
        };
        Ok(Response::new(ModelMetadataResponse {
            name: m.name,
            versions: m.versions,
            platform: m.platform.into(),
            inputs: t(m.inputs),
            outputs: t(m.outputs),
        }))
    }

    async fn model_infer(&self, r: Request<ModelInferRequest>) -> Reply<ModelInferResponse> {
        let r = r.into_inner();
        let (name, version) = (r.model_name.clone(), r.model_version.clone());
        let request = decode_request(r, self.service.repository.limits())?;
        let response = self.service.infer(&name, opt(&version), request).await?;
        let mut raw = Vec::with_capacity(response.outputs.len());
        let outputs = response
            .outputs
            .into_iter()
            .map(|o| {
                raw.push(o.data.to_raw());
                model_infer_response::InferOutputTensor {
                    name: o.name,
                    datatype: o.data.datatype().as_str().into(),
                    shape: o.shape.iter().map(|&d| d as i64).collect(),
                    parameters: HashMap::new(),
                    contents: None,
                }
            })
            .collect();
        Ok(Response::new(ModelInferResponse {
            model_name: response.model_name,
            model_version: response.model_version,
            id: response.id,
            parameters: HashMap::new(),
            outputs,
            raw_output_contents: raw,
        }))
    }

    async fn model_config(&self, r: Request<ModelConfigRequest>) -> Reply<ModelConfigResponse> {
        let r = r.into_inner();
        let c = self.service.model_config(&r.name, opt(&r.version))?;
        Ok(Response::new(ModelConfigResponse { config: Some(config_proto(&c)) }))
    }

    async fn model_statistics(&self, r: Request<ModelStatisticsRequest>) -> Reply<ModelStatisticsResponse> {
        let r = r.into_inner();
        let rows = self.service.statistics(opt(&r.name), opt(&r.version))?;
        let d = |d: crate::protocols::service::Duration| Some(StatisticDuration { count: d.count, ns: d.ns });
        let model_stats = rows
            .into_iter()
            .map(|s| proto::ModelStatistics {
                name: s.name,
                version: s.version,
                last_inference: s.last_inference,
                inference_count: s.inference_count,
                execution_count: s.execution_count,
                inference_stats: Some(InferStatistics {
                    success: d(s.success),
                    fail: d(s.fail),
                    queue: d(s.queue),
                    compute_input: d(s.compute_input),
                    compute_infer: d(s.compute_infer),
                    compute_output: d(s.compute_output),
                    cache_hit: d(Default::default()),
                    cache_miss: d(Default::default()),
                }),
            })
            .collect();
        Ok(Response::new(ModelStatisticsResponse { model_stats }))
    }

    async fn repository_index(&self, r: Request<RepositoryIndexRequest>) -> Reply<RepositoryIndexResponse> {
        let r = r.into_inner();
        let models = self
            .service
            .index(r.ready)
            .into_iter()
            .map(|e| repository_index_response::ModelIndex { name: e.name, version: e.version, state: e.state.into(), reason: e.reason })
            .collect();
        Ok(Response::new(RepositoryIndexResponse { models }))
    }

    async fn repository_model_load(&self, r: Request<RepositoryModelLoadRequest>) -> Reply<RepositoryModelLoadResponse> {
        let r = r.into_inner();
        if let Some(k) = r.parameters.keys().next() {
            return Err(
                ServeError::Unsupported(format!("repository parameter '{k}' is not supported (models load from their folder)")).into()
            );
        }
        self.service.load(&r.model_name).await?;
        Ok(Response::new(RepositoryModelLoadResponse {}))
    }

    async fn repository_model_unload(&self, r: Request<RepositoryModelUnloadRequest>) -> Reply<RepositoryModelUnloadResponse> {
        let r = r.into_inner();
        use proto::model_repository_parameter::ParameterChoice as P;
        for (k, v) in &r.parameters {
            if !(k == "unload_dependents" && matches!(v.parameter_choice, Some(P::BoolParam(false)) | None)) {
                return Err(ServeError::Unsupported(format!("repository parameter '{k}' is not supported")).into());
            }
        }
        self.service.unload(&r.model_name).await?;
        Ok(Response::new(RepositoryModelUnloadResponse {}))
    }
}
