//! The cxx bridge: TensorRT's enums, the shim's functions, and the Rust callbacks
//! the shim calls. Everything here is raw; the safe API lives in the `trt` crate.
#![allow(missing_docs, non_camel_case_types, clippy::missing_safety_doc)]

#[cxx::bridge(namespace = "trt_shim")]
pub mod ffi {
    // ---- TensorRT enums that are identical in 10.x, 11.x and TensorRT-RTX 1.x.
    // Each one is bound to the C++ enum of the same name: cxx emits a
    // static_assert per variant, so the compiler checks every value against the
    // headers that were found. Enums whose numbering differs between versions
    // (BuilderFlag, NetworkDefinitionCreationFlag) are mapped by name in the
    // shim instead (see ShimBuilderFlag).

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum DataType {
        kFLOAT = 0,
        kHALF = 1,
        kINT8 = 2,
        kINT32 = 3,
        kBOOL = 4,
        kUINT8 = 5,
        kFP8 = 6,
        kBF16 = 7,
        kINT64 = 8,
        kINT4 = 9,
        kFP4 = 10,
        kE8M0 = 11,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum TensorIOMode {
        kNONE = 0,
        kINPUT = 1,
        kOUTPUT = 2,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum TensorFormat {
        kLINEAR = 0,
        kCHW2 = 1,
        kHWC8 = 2,
        kCHW4 = 3,
        kCHW16 = 4,
        kCHW32 = 5,
        kDHWC8 = 6,
        kCDHW32 = 7,
        kHWC = 8,
        kDLA_LINEAR = 9,
        kDLA_HWC4 = 10,
        kHWC16 = 11,
        kDHWC = 12,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum TensorLocation {
        kDEVICE = 0,
        kHOST = 1,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum LayerType {
        kCONVOLUTION = 0,
        kCAST = 1,
        kACTIVATION = 2,
        kPOOLING = 3,
        kLRN = 4,
        kSCALE = 5,
        kSOFTMAX = 6,
        kDECONVOLUTION = 7,
        kCONCATENATION = 8,
        kELEMENTWISE = 9,
        kPLUGIN = 10,
        kUNARY = 11,
        kPADDING = 12,
        kSHUFFLE = 13,
        kREDUCE = 14,
        kTOPK = 15,
        kGATHER = 16,
        kMATRIX_MULTIPLY = 17,
        kRAGGED_SOFTMAX = 18,
        kCONSTANT = 19,
        kIDENTITY = 20,
        kPLUGIN_V2 = 21,
        kSLICE = 22,
        kSHAPE = 23,
        kPARAMETRIC_RELU = 24,
        kRESIZE = 25,
        kTRIP_LIMIT = 26,
        kRECURRENCE = 27,
        kITERATOR = 28,
        kLOOP_OUTPUT = 29,
        kSELECT = 30,
        kFILL = 31,
        kQUANTIZE = 32,
        kDEQUANTIZE = 33,
        kCONDITION = 34,
        kCONDITIONAL_INPUT = 35,
        kCONDITIONAL_OUTPUT = 36,
        kSCATTER = 37,
        kEINSUM = 38,
        kASSERTION = 39,
        kONE_HOT = 40,
        kNON_ZERO = 41,
        kGRID_SAMPLE = 42,
        kNMS = 43,
        kREVERSE_SEQUENCE = 44,
        kNORMALIZATION = 45,
        kPLUGIN_V3 = 46,
        kSQUEEZE = 47,
        kUNSQUEEZE = 48,
        kCUMULATIVE = 49,
        kDYNAMIC_QUANTIZE = 50,
        kATTENTION_INPUT = 51,
        kATTENTION_OUTPUT = 52,
        kROTARY_EMBEDDING = 53,
        kKVCACHE_UPDATE = 54,
        kMOE = 55,
        kDIST_COLLECTIVE = 56,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum ActivationType {
        kRELU = 0,
        kSIGMOID = 1,
        kTANH = 2,
        kLEAKY_RELU = 3,
        kELU = 4,
        kSELU = 5,
        kSOFTSIGN = 6,
        kSOFTPLUS = 7,
        kCLIP = 8,
        kHARD_SIGMOID = 9,
        kSCALED_TANH = 10,
        kTHRESHOLDED_RELU = 11,
        kGELU_ERF = 12,
        kGELU_TANH = 13,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum ElementWiseOperation {
        kSUM = 0,
        kPROD = 1,
        kMAX = 2,
        kMIN = 3,
        kSUB = 4,
        kDIV = 5,
        kPOW = 6,
        kFLOOR_DIV = 7,
        kAND = 8,
        kOR = 9,
        kXOR = 10,
        kEQUAL = 11,
        kGREATER = 12,
        kLESS = 13,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum UnaryOperation {
        kEXP = 0,
        kLOG = 1,
        kSQRT = 2,
        kRECIP = 3,
        kABS = 4,
        kNEG = 5,
        kSIN = 6,
        kCOS = 7,
        kTAN = 8,
        kSINH = 9,
        kCOSH = 10,
        kASIN = 11,
        kACOS = 12,
        kATAN = 13,
        kASINH = 14,
        kACOSH = 15,
        kATANH = 16,
        kCEIL = 17,
        kFLOOR = 18,
        kERF = 19,
        kNOT = 20,
        kSIGN = 21,
        kROUND = 22,
        kISINF = 23,
        kISNAN = 24,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum ReduceOperation {
        kSUM = 0,
        kPROD = 1,
        kMAX = 2,
        kMIN = 3,
        kAVG = 4,
        kNONE = 5,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum MatrixOperation {
        kNONE = 0,
        kTRANSPOSE = 1,
        kVECTOR = 2,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum MemoryPoolType {
        kWORKSPACE = 0,
        kDLA_MANAGED_SRAM = 1,
        kDLA_LOCAL_DRAM = 2,
        kDLA_GLOBAL_DRAM = 3,
        kTACTIC_DRAM = 4,
        kTACTIC_SHARED_MEMORY = 5,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum OptProfileSelector {
        kMIN = 0,
        kOPT = 1,
        kMAX = 2,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum HardwareCompatibilityLevel {
        kNONE = 0,
        kAMPERE_PLUS = 1,
        kSAME_COMPUTE_CAPABILITY = 2,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum ErrorCode {
        kSUCCESS = 0,
        kUNSPECIFIED_ERROR = 1,
        kINTERNAL_ERROR = 2,
        kINVALID_ARGUMENT = 3,
        kINVALID_CONFIG = 4,
        kFAILED_ALLOCATION = 5,
        kFAILED_INITIALIZATION = 6,
        kFAILED_EXECUTION = 7,
        kFAILED_COMPUTATION = 8,
        kINVALID_STATE = 9,
        kUNSUPPORTED_STATE = 10,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum ProfilingVerbosity {
        kLAYER_NAMES_ONLY = 0,
        kNONE = 1,
        kDETAILED = 2,
    }

    #[namespace = "nvinfer1"]
    #[repr(i32)]
    #[derive(Debug)]
    enum ExecutionContextAllocationStrategy {
        kSTATIC = 0,
        kON_PROFILE_CHANGE = 1,
        kUSER_MANAGED = 2,
    }

    /// Builder flags by name. Their numbers differ between TensorRT versions, so
    /// the shim maps each to the enumerator of the found headers; a flag the
    /// headers lack makes `config_set_flag` return false.
    #[repr(u8)]
    #[derive(Debug)]
    enum ShimBuilderFlag {
        Fp16,
        Bf16,
        Int8,
        Fp8,
        Tf32,
        Refit,
        VersionCompatible,
        ExcludeLeanRuntime,
        StripPlan,
        Debug,
        DisableTimingCache,
        ErrorOnTimingCacheMiss,
        EditableTimingCache,
        SparseWeights,
        StrictNans,
        ObeyPrecisionConstraints,
        PreferPrecisionConstraints,
        WeightStreaming,
    }

    /// One error recorded by the ONNX parser.
    #[derive(Debug)]
    struct OnnxParserError {
        code: i32,
        code_name: String,
        description: String,
        file: String,
        line: i32,
        function: String,
        node: i32,
        node_name: String,
        node_operator: String,
    }

    /// Everything an engine says about one of its I/O tensors.
    #[derive(Debug)]
    struct TensorDesc {
        name: String,
        mode: TensorIOMode,
        dtype: DataType,
        shape: Vec<i64>,
        format: TensorFormat,
        format_desc: String,
        vectorized_dim: i32,
        components_per_element: i32,
        is_shape_binding: bool,
        location: TensorLocation,
    }

    /// An I/O tensor's memory format for one optimization profile.
    #[derive(Debug)]
    struct TensorFormatDesc {
        format: TensorFormat,
        format_desc: String,
        vectorized_dim: i32,
        components_per_element: i32,
    }

    /// What `inferShapes` said: 0 all inputs specified, n > 0 these inputs are
    /// not, -1 another error (e.g. a negative inferred dimension).
    #[derive(Debug)]
    struct InferredShapes {
        status: i32,
        missing: Vec<String>,
    }

    extern "Rust" {
        /// Receives every message of the shim's logger (severity as ILogger::Severity).
        fn forward_log(severity: i32, message: &str);
        /// Receives every error reported to the shim's IErrorRecorder.
        fn forward_error(code: i32, description: &str);

        type ProgressSink;
        fn phase_start(self: &mut ProgressSink, phase: &str, parent: &str, steps: i32);
        fn step_complete(self: &mut ProgressSink, phase: &str, step: i32) -> bool;
        fn phase_finish(self: &mut ProgressSink, phase: &str);

        type ProfilerSink;
        fn report_layer_time(self: &mut ProfilerSink, layer: &str, ms: f32);

        type CalibratorSink;
        fn batch_size(self: &CalibratorSink) -> i32;
        fn next_batch(self: &mut CalibratorSink) -> bool;
        fn input_address(self: &mut CalibratorSink, name: &str) -> usize;
        fn cache(self: &CalibratorSink) -> &[u8];
        fn write_cache(self: &mut CalibratorSink, data: &[u8]);

        type OutputSink;
        fn reallocate(self: &mut OutputSink, name: &str, current: usize, size: u64, alignment: u64, stream: usize) -> usize;
        fn notify_shape(self: &mut OutputSink, name: &str, dims: &[i64]);
    }

    #[namespace = "nvinfer1"]
    unsafe extern "C++" {
        include!("trt_shim.h");
        type DataType;
        type TensorIOMode;
        type TensorFormat;
        type TensorLocation;
        type LayerType;
        type ActivationType;
        type ElementWiseOperation;
        type UnaryOperation;
        type ReduceOperation;
        type MatrixOperation;
        type MemoryPoolType;
        type OptProfileSelector;
        type HardwareCompatibilityLevel;
        type ErrorCode;
        type ProfilingVerbosity;
        type ExecutionContextAllocationStrategy;

        type IBuilder;
        type IBuilderConfig;
        type INetworkDefinition;
        type IOptimizationProfile;
        type IRefitter;
        type IHostMemory;
        type ITimingCache;
        type ITensor;
        type ILayer;
        type IRuntime;
        type ICudaEngine;
        type IExecutionContext;
    }

    #[namespace = "nvonnxparser"]
    unsafe extern "C++" {
        type IParser;
    }

    unsafe extern "C++" {
        include!("trt_shim.h");
        type ProgressMonitor;
        type OutputAllocator;
        type Calibrator;
        type Profiler;

        // versions and logging
        fn header_version() -> i32;
        fn header_is_rtx() -> bool;
        fn header_version_string() -> String;
        fn set_log_threshold(severity: i32);

        // factories: `factory` is the address of the exported create*_INTERNAL symbol.
        unsafe fn create_builder(factory: usize) -> Result<*mut IBuilder>;
        unsafe fn create_runtime(factory: usize) -> Result<*mut IRuntime>;
        unsafe fn create_onnx_parser(factory: usize, network: Pin<&mut INetworkDefinition>) -> Result<*mut IParser>;

        // builder and config
        fn builder_create_network(builder: Pin<&mut IBuilder>, strongly_typed: bool) -> Result<UniquePtr<INetworkDefinition>>;
        fn builder_create_config(builder: Pin<&mut IBuilder>) -> Result<UniquePtr<IBuilderConfig>>;
        fn builder_create_profile(builder: Pin<&mut IBuilder>) -> Result<*mut IOptimizationProfile>;
        fn builder_build_serialized(
            builder: Pin<&mut IBuilder>,
            network: Pin<&mut INetworkDefinition>,
            config: Pin<&mut IBuilderConfig>,
        ) -> Result<UniquePtr<IHostMemory>>;
        fn host_memory_bytes(memory: &IHostMemory) -> &[u8];

        fn config_set_flag(config: Pin<&mut IBuilderConfig>, flag: ShimBuilderFlag, on: bool) -> Result<bool>;
        fn config_get_flag(config: &IBuilderConfig, flag: ShimBuilderFlag) -> Result<bool>;
        fn config_set_memory_pool_limit(config: Pin<&mut IBuilderConfig>, pool: MemoryPoolType, bytes: usize) -> Result<()>;
        fn config_get_memory_pool_limit(config: &IBuilderConfig, pool: MemoryPoolType) -> Result<usize>;
        fn config_set_optimization_level(config: Pin<&mut IBuilderConfig>, level: i32) -> Result<()>;
        fn config_set_hardware_compatibility(config: Pin<&mut IBuilderConfig>, level: HardwareCompatibilityLevel) -> Result<()>;
        fn config_set_profiling_verbosity(config: Pin<&mut IBuilderConfig>, verbosity: ProfilingVerbosity) -> Result<()>;
        fn config_add_profile(config: Pin<&mut IBuilderConfig>, profile: &IOptimizationProfile) -> Result<i32>;
        /// `getNbOptimizationProfiles`: the profiles TensorRT holds for this config.
        fn config_nb_profiles(config: &IBuilderConfig) -> Result<i32>;
        fn config_set_compute_capabilities(config: Pin<&mut IBuilderConfig>, targets: &[i32]) -> Result<bool>;
        fn new_calibrator(sink: Box<CalibratorSink>) -> Result<UniquePtr<Calibrator>>;
        /// False where the headers have no implicit INT8 calibration (11.x, TensorRT-RTX).
        fn config_set_int8_calibrator(config: Pin<&mut IBuilderConfig>, calibrator: Pin<&mut Calibrator>) -> Result<bool>;
        fn new_progress_monitor(sink: Box<ProgressSink>) -> Result<UniquePtr<ProgressMonitor>>;
        fn config_set_progress_monitor(config: Pin<&mut IBuilderConfig>, monitor: Pin<&mut ProgressMonitor>) -> Result<()>;
        fn config_clear_progress_monitor(config: Pin<&mut IBuilderConfig>) -> Result<()>;
        fn config_create_timing_cache(config: &IBuilderConfig, blob: &[u8]) -> Result<UniquePtr<ITimingCache>>;
        fn config_set_timing_cache(config: Pin<&mut IBuilderConfig>, cache: &ITimingCache, ignore_mismatch: bool) -> Result<bool>;
        fn timing_cache_serialize(cache: &ITimingCache) -> Result<UniquePtr<IHostMemory>>;
        fn timing_cache_combine(cache: Pin<&mut ITimingCache>, other: &ITimingCache, ignore_mismatch: bool) -> Result<bool>;

        fn profile_set_dims(profile: Pin<&mut IOptimizationProfile>, input: &str, which: OptProfileSelector, dims: &[i64]) -> Result<bool>;
        fn profile_get_dims(profile: &IOptimizationProfile, input: &str, which: OptProfileSelector) -> Result<Vec<i64>>;
        fn profile_is_valid(profile: &IOptimizationProfile) -> Result<bool>;

        // network
        fn network_add_input(network: Pin<&mut INetworkDefinition>, name: &str, dtype: DataType, dims: &[i64]) -> Result<*mut ITensor>;
        fn network_mark_output(network: Pin<&mut INetworkDefinition>, tensor: Pin<&mut ITensor>) -> Result<()>;
        fn network_nb_inputs(network: &INetworkDefinition) -> Result<i32>;
        fn network_nb_outputs(network: &INetworkDefinition) -> Result<i32>;
        fn network_nb_layers(network: &INetworkDefinition) -> Result<i32>;
        fn network_input(network: &INetworkDefinition, index: i32) -> Result<*mut ITensor>;
        fn network_output(network: &INetworkDefinition, index: i32) -> Result<*mut ITensor>;
        fn network_layer(network: &INetworkDefinition, index: i32) -> Result<*mut ILayer>;
        fn network_is_strongly_typed(network: &INetworkDefinition) -> Result<bool>;

        fn network_add_constant(
            network: Pin<&mut INetworkDefinition>,
            dims: &[i64],
            dtype: DataType,
            bytes: &[u8],
            count: i64,
        ) -> Result<*mut ILayer>;
        fn network_add_activation(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            kind: ActivationType,
            alpha: f32,
            beta: f32,
        ) -> Result<*mut ILayer>;
        fn network_add_elementwise(
            network: Pin<&mut INetworkDefinition>,
            a: Pin<&mut ITensor>,
            b: Pin<&mut ITensor>,
            op: ElementWiseOperation,
        ) -> Result<*mut ILayer>;
        fn network_add_unary(network: Pin<&mut INetworkDefinition>, input: Pin<&mut ITensor>, op: UnaryOperation) -> Result<*mut ILayer>;
        fn network_add_matmul(
            network: Pin<&mut INetworkDefinition>,
            a: Pin<&mut ITensor>,
            op_a: MatrixOperation,
            b: Pin<&mut ITensor>,
            op_b: MatrixOperation,
        ) -> Result<*mut ILayer>;
        fn network_add_softmax(network: Pin<&mut INetworkDefinition>, input: Pin<&mut ITensor>, axes: u32) -> Result<*mut ILayer>;
        fn network_add_reduce(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            op: ReduceOperation,
            axes: u32,
            keep_dims: bool,
        ) -> Result<*mut ILayer>;
        fn network_add_shuffle(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            first: &[i32],
            has_reshape: bool,
            reshape: &[i64],
            second: &[i32],
            zero_is_placeholder: bool,
        ) -> Result<*mut ILayer>;
        fn network_add_shuffle_dynamic(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            shape: Pin<&mut ITensor>,
        ) -> Result<*mut ILayer>;
        fn network_add_gather(
            network: Pin<&mut INetworkDefinition>,
            data: Pin<&mut ITensor>,
            indices: Pin<&mut ITensor>,
            axis: i32,
        ) -> Result<*mut ILayer>;
        unsafe fn network_add_concat(network: Pin<&mut INetworkDefinition>, inputs: &[usize], axis: i32) -> Result<*mut ILayer>;
        fn network_add_slice(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            start: &[i64],
            size: &[i64],
            stride: &[i64],
        ) -> Result<*mut ILayer>;
        fn network_add_slice_dynamic(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            start: Pin<&mut ITensor>,
            size: Pin<&mut ITensor>,
            stride: Pin<&mut ITensor>,
        ) -> Result<*mut ILayer>;
        fn network_add_cast(network: Pin<&mut INetworkDefinition>, input: Pin<&mut ITensor>, to: DataType) -> Result<*mut ILayer>;
        fn network_add_normalization(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            scale: Pin<&mut ITensor>,
            bias: Pin<&mut ITensor>,
            axes: u32,
            epsilon: f32,
        ) -> Result<*mut ILayer>;
        fn network_add_select(
            network: Pin<&mut INetworkDefinition>,
            cond: Pin<&mut ITensor>,
            a: Pin<&mut ITensor>,
            b: Pin<&mut ITensor>,
        ) -> Result<*mut ILayer>;
        fn network_add_identity(network: Pin<&mut INetworkDefinition>, input: Pin<&mut ITensor>) -> Result<*mut ILayer>;
        fn network_add_shape(network: Pin<&mut INetworkDefinition>, input: Pin<&mut ITensor>) -> Result<*mut ILayer>;
        fn network_add_fill(
            network: Pin<&mut INetworkDefinition>,
            length: i64,
            start: f64,
            delta: f64,
            dtype: DataType,
        ) -> Result<*mut ILayer>;
        fn network_add_quantize(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            scale: Pin<&mut ITensor>,
            to: DataType,
        ) -> Result<*mut ILayer>;
        fn network_add_dequantize(
            network: Pin<&mut INetworkDefinition>,
            input: Pin<&mut ITensor>,
            scale: Pin<&mut ITensor>,
            to: DataType,
        ) -> Result<*mut ILayer>;

        fn layer_name(layer: &ILayer) -> Result<String>;
        fn layer_set_name(layer: Pin<&mut ILayer>, name: &str) -> Result<()>;
        fn layer_type(layer: &ILayer) -> Result<LayerType>;
        fn layer_nb_outputs(layer: &ILayer) -> Result<i32>;
        fn layer_nb_inputs(layer: &ILayer) -> Result<i32>;
        fn layer_output(layer: &ILayer, index: i32) -> Result<*mut ITensor>;
        fn layer_input(layer: &ILayer, index: i32) -> Result<*mut ITensor>;

        fn tensor_name(tensor: &ITensor) -> Result<String>;
        fn tensor_set_name(tensor: Pin<&mut ITensor>, name: &str) -> Result<()>;
        fn tensor_type(tensor: &ITensor) -> Result<DataType>;
        fn tensor_dims(tensor: &ITensor) -> Result<Vec<i64>>;
        fn tensor_is_shape(tensor: &ITensor) -> Result<bool>;
        fn tensor_is_input(tensor: &ITensor) -> Result<bool>;
        fn tensor_is_output(tensor: &ITensor) -> Result<bool>;

        // ONNX parser
        fn parser_parse(parser: Pin<&mut IParser>, model: &[u8], path: &str) -> Result<bool>;
        fn parser_parse_file(parser: Pin<&mut IParser>, path: &str) -> Result<bool>;
        fn parser_errors(parser: &IParser) -> Result<Vec<OnnxParserError>>;
        fn parser_supports_operator(parser: &IParser, op: &str) -> Result<bool>;

        // runtime, engine, context
        fn runtime_deserialize(runtime: Pin<&mut IRuntime>, plan: &[u8]) -> Result<UniquePtr<ICudaEngine>>;
        fn runtime_set_error_recorder(runtime: Pin<&mut IRuntime>) -> Result<()>;
        fn engine_nb_io(engine: &ICudaEngine) -> Result<i32>;
        fn engine_nb_layers(engine: &ICudaEngine) -> Result<i32>;
        fn engine_nb_profiles(engine: &ICudaEngine) -> Result<i32>;
        fn engine_device_memory_size(engine: &ICudaEngine) -> Result<i64>;
        fn engine_name(engine: &ICudaEngine) -> Result<String>;
        fn engine_tensor(engine: &ICudaEngine, index: i32) -> Result<TensorDesc>;
        fn engine_profile_dims(engine: &ICudaEngine, name: &str, profile: i32, which: OptProfileSelector) -> Result<Vec<i64>>;
        fn engine_serialize(engine: &ICudaEngine) -> Result<UniquePtr<IHostMemory>>;
        fn engine_layer_info(engine: &ICudaEngine, json: bool) -> Result<String>;
        fn engine_tensor_format(engine: &ICudaEngine, name: &str, profile: i32) -> Result<TensorFormatDesc>;
        fn engine_create_context(
            engine: Pin<&mut ICudaEngine>,
            strategy: ExecutionContextAllocationStrategy,
            specialization: i32,
            rtx_graphs: i32,
        ) -> Result<UniquePtr<IExecutionContext>>;

        fn context_set_profile(context: Pin<&mut IExecutionContext>, profile: i32, stream: usize) -> Result<bool>;
        // refit (the plan must be built refittable)
        fn create_refitter(factory: usize, engine: Pin<&mut ICudaEngine>) -> Result<UniquePtr<IRefitter>>;
        fn refitter_set_named_weights(refitter: Pin<&mut IRefitter>, name: &str, dtype: DataType, bytes: &[u8], count: i64)
            -> Result<bool>;
        fn refitter_missing_weights(refitter: Pin<&mut IRefitter>) -> Result<Vec<String>>;
        fn refitter_all_weights(refitter: Pin<&mut IRefitter>) -> Result<Vec<String>>;
        /// `refitCudaEngineAsync` on the raw `cudaStream_t`.
        fn refitter_refit(refitter: Pin<&mut IRefitter>, stream: usize) -> Result<bool>;
        // weight streaming (the plan must be built with BuilderFlag::kWEIGHT_STREAMING)
        fn engine_set_weight_streaming_budget(engine: Pin<&mut ICudaEngine>, bytes: i64) -> Result<bool>;
        fn engine_weight_streaming_budget(engine: &ICudaEngine) -> Result<i64>;
        fn engine_streamable_weights_size(engine: &ICudaEngine) -> Result<i64>;
        fn engine_weight_streaming_automatic_budget(engine: &ICudaEngine) -> Result<i64>;
        fn engine_weight_streaming_scratch_memory_size(engine: &ICudaEngine) -> Result<i64>;
        /// A C++ `IProfiler` forwarding each layer's time to `sink`.
        fn new_profiler(sink: Box<ProfilerSink>) -> Result<UniquePtr<Profiler>>;
        /// Calls `reportLayerTime` through the `IProfiler` base class, as TensorRT does.
        fn profiler_report(profiler: Pin<&mut Profiler>, layer: &str, ms: f32) -> Result<()>;
        fn context_set_profiler(context: Pin<&mut IExecutionContext>, profiler: Pin<&mut Profiler>) -> Result<()>;
        fn context_clear_profiler(context: Pin<&mut IExecutionContext>) -> Result<()>;
        fn context_set_enqueue_emits_profile(context: Pin<&mut IExecutionContext>, on: bool) -> Result<()>;
        fn context_report_to_profiler(context: &IExecutionContext) -> Result<bool>;
        fn context_profile(context: &IExecutionContext) -> Result<i32>;
        fn context_set_input_shape(context: Pin<&mut IExecutionContext>, name: &str, dims: &[i64]) -> Result<bool>;
        fn context_tensor_shape(context: &IExecutionContext, name: &str) -> Result<Vec<i64>>;
        fn context_infer_shapes(context: Pin<&mut IExecutionContext>) -> Result<InferredShapes>;
        fn context_is_stream_capturable(context: &IExecutionContext, stream: usize) -> Result<i32>;
        unsafe fn context_set_tensor_address(context: Pin<&mut IExecutionContext>, name: &str, address: usize) -> Result<bool>;
        unsafe fn context_enqueue(context: Pin<&mut IExecutionContext>, stream: usize) -> Result<bool>;
        unsafe fn context_set_device_memory(context: Pin<&mut IExecutionContext>, address: usize, size: i64) -> Result<()>;
        fn new_output_allocator(sink: Box<OutputSink>) -> Result<UniquePtr<OutputAllocator>>;
        fn context_set_output_allocator(
            context: Pin<&mut IExecutionContext>,
            name: &str,
            allocator: Pin<&mut OutputAllocator>,
        ) -> Result<bool>;
        fn output_allocator_reallocate(
            allocator: Pin<&mut OutputAllocator>,
            name: &str,
            current: usize,
            size: u64,
            alignment: u64,
            stream: usize,
        ) -> Result<usize>;
    }

    // Objects created by factories arrive as raw pointers and are owned afterwards.
    impl UniquePtr<IBuilder> {}
    impl UniquePtr<IRuntime> {}
    impl UniquePtr<IParser> {}
}

use crate::callbacks::{forward_error, forward_log, CalibratorSink, OutputSink, ProfilerSink, ProgressSink};
