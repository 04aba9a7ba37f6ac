//! The `#[cxx::bridge]` between Rust and the C++ shim over `tensorrt_llm::executor`; nothing else.
//!
//! cxx cannot carry `std::optional`, `std::list`, `std::variant` or `std::chrono` types, so the
//! bridge speaks in plain structs: optionals become `Opt*` pairs or documented sentinels, token
//! sequences become `TokenSeq`, and time points become steady-clock nanoseconds.

#[cxx::bridge(namespace = "trtllm::shim")]
#[allow(missing_docs, missing_debug_implementations)]
pub(crate) mod sys {
    // ---- Shared structs: plain data that crosses the boundary by value ----

    /// An optional `i32`.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct OptI32 {
        set: bool,
        value: i32,
    }

    /// An optional `f32`.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct OptF32 {
        set: bool,
        value: f32,
    }

    /// An optional `u64`.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct OptU64 {
        set: bool,
        value: u64,
    }

    // ---- Shared enums: the shim converts upstream enums to these by name, never by casting a number;
    // ---- a value it does not know becomes `Unknown` (raw value beside it), and Rust's catch-all
    // ---- arms treat any other value C++ may hand over as unknown too.

    /// `CapacitySchedulerPolicy`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum SchedulerPolicyKind {
        MaxUtilization,
        #[default]
        GuaranteedNoEvict,
        StaticBatch,
    }

    /// `ContextChunkingPolicy`, or unset (the executor's own default).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum ChunkingPolicyKind {
        #[default]
        Unset,
        FirstComeFirstServed,
        EqualProgress,
    }

    /// `FinishReason`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum FinishKind {
        #[default]
        NotFinished,
        EndId,
        StopWords,
        Length,
        TimedOut,
        Cancelled,
        /// An upstream value the shim does not know; see `FinishItem::raw`.
        Unknown,
    }

    /// One sequence's finish reason, with the upstream value it came from.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct FinishItem {
        kind: FinishKind,
        raw: i32,
    }

    /// `RequestStage`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum RequestStageKind {
        #[default]
        Queued,
        EncoderInProgress,
        ContextInProgress,
        GenerationInProgress,
        GenerationComplete,
        /// An upstream value the shim does not know; see `RequestStatsItem::stage_raw`.
        Unknown,
    }

    /// Which alternative of `KVCacheEventData` an event holds.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum KvEventKind {
        #[default]
        Created,
        Stored,
        Removed,
        Updated,
        /// An alternative the shim does not know; the event carries no data.
        Unknown,
    }

    /// One token-id sequence (a beam, a stop word, a bad word).
    #[derive(Clone, Debug, Default, PartialEq)]
    struct TokenSeq {
        ids: Vec<i32>,
    }

    /// One per-beam list of floats (log probabilities).
    #[derive(Clone, Debug, Default, PartialEq)]
    struct FloatSeq {
        values: Vec<f32>,
    }

    /// `ParallelConfig` pass-through; `set == false` leaves it unset (one GPU, leader mode).
    #[derive(Clone, Debug, Default)]
    struct ParallelOptions {
        set: bool,
        orchestrator: bool,
        worker_executable_path: String,
        device_ids: Vec<i32>,
        participant_ids: Vec<i32>,
    }

    // ---- Disaggregated serving ----

    /// `RequestType`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum RequestTypeKind {
        #[default]
        ContextAndGeneration,
        ContextOnly,
        GenerationOnly,
    }

    /// `CacheTransceiverConfig::BackendType`, or unset (the release's default).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum TransceiverBackendKind {
        #[default]
        Unset,
        Default,
        Mpi,
        Ucx,
        Nixl,
    }

    /// `CacheTransceiverConfig`; `set == false` leaves it unset (no transceiver).
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct CacheTransceiverOptions {
        set: bool,
        backend: TransceiverBackendKind,
        max_tokens_in_buffer: OptU64,
        kv_transfer_timeout_ms: OptI32,
    }

    /// `ContextPhaseParams` with its state serialized (`getSerializedState`); `set == false`: none.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    struct ContextPhaseItem {
        set: bool,
        request_id: u64,
        first_gen_tokens: Vec<i32>,
        has_draft_tokens: bool,
        draft_tokens: Vec<i32>,
        serialized_state: Vec<u8>,
    }

    // ---- LoRA ----

    /// The element type of a LoRA weights tensor (`DataType`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum LoraWeightKind {
        #[default]
        F16,
        Bf16,
        F32,
    }

    /// `LoraConfig`: a task id, with (first use) a config tensor `[rows, 3]` int32 and a weights tensor
    /// `[rows, row_len]` of `dtype` in little-endian bytes. `set == false`: the request has no adapter.
    #[derive(Clone, Debug, Default)]
    struct LoraSpec {
        set: bool,
        task_id: u64,
        has_weights: bool,
        dtype: LoraWeightKind,
        row_len: i64,
        config: Vec<i32>,
        weights: Vec<u8>,
    }

    /// `PeftCacheConfig`; `set == false` leaves it unset (the executor's defaults).
    #[derive(Clone, Debug, Default)]
    struct PeftCacheOptions {
        set: bool,
        num_host_module_layer: i32,
        num_device_module_layer: i32,
        optimal_adapter_size: i32,
        max_adapter_size: i32,
        device_cache_percent: OptF32,
        host_cache_size: OptU64,
        /// Empty: unset.
        lora_prefetch_dir: String,
    }

    /// The simulated executor's own LoRA device-cache counters; `available == false` on a real executor.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct LoraCacheCountsItem {
        available: bool,
        hits: u64,
        misses: u64,
        evictions: u64,
    }

    // ---- Speculative decoding ----

    /// `DecodingMode`, or unset (no `DecodingConfig`: the executor's default).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum DecodingModeKind {
        #[default]
        Unset,
        Auto,
        TopKTopP,
        BeamSearch,
        Medusa,
        Lookahead,
        ExplicitDraftTokens,
        ExternalDraftTokens,
        Eagle,
    }

    /// `LookaheadDecodingConfig`; `set == false` leaves it unset.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    struct LookaheadSpec {
        set: bool,
        window_size: i32,
        ngram_size: i32,
        verification_set_size: i32,
    }

    /// `EagleConfig`; `set == false` leaves it unset. Empty `choices`: no static tree.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct EagleSpec {
        set: bool,
        choices: Vec<TokenSeq>,
        greedy_sampling: bool,
        posterior_threshold: OptF32,
        use_dynamic_tree: bool,
        dynamic_tree_max_top_k: OptI32,
    }

    /// `DecodingConfig`. Empty `medusa_choices`: unset.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct DecodingOptions {
        mode: DecodingModeKind,
        lookahead: LookaheadSpec,
        medusa_choices: Vec<TokenSeq>,
        eagle: EagleSpec,
    }

    /// A request's speculative-decoding settings: lookahead / Eagle configs and external draft tokens.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct SpeculativeSpec {
        lookahead: LookaheadSpec,
        eagle: EagleSpec,
        /// `ExternalDraftTokensConfig` is set when this is true (the tokens may be empty).
        has_draft_tokens: bool,
        draft_tokens: Vec<i32>,
        draft_acceptance_threshold: OptF32,
    }

    /// `ExecutorConfig` and its sub-configs. Zero or negative means "unset" where documented.
    #[derive(Clone, Debug, Default)]
    struct ExecutorOptions {
        max_beam_width: i32,
        /// 0: the engine's limit.
        max_batch_size: i32,
        /// 0: the engine's limit.
        max_num_tokens: i32,
        capacity_scheduler_policy: SchedulerPolicyKind,
        context_chunking_policy: ChunkingPolicyKind,
        enable_chunked_context: bool,
        kv_enable_block_reuse: bool,
        kv_enable_partial_reuse: bool,
        kv_copy_on_partial_reuse: bool,
        /// 0: unset.
        kv_max_tokens: i32,
        /// <= 0: unset (the executor then uses 0.9).
        kv_free_gpu_memory_fraction: f32,
        kv_host_cache_size: u64,
        kv_event_buffer_max_size: u64,
        multi_block_mode: bool,
        enable_context_fmha_fp32_acc: bool,
        cuda_graph_mode: bool,
        cuda_graph_cache_size: i32,
        /// 0: unbounded.
        max_queue_size: i32,
        iter_stats_max_iterations: i32,
        request_stats_max_iterations: i32,
        normalize_log_probs: bool,
        gpu_weights_percent: f32,
        gather_generation_logits: bool,
        parallel: ParallelOptions,
        /// LoRA adapter caches.
        peft_cache: PeftCacheOptions,
        /// `DecodingConfig` (speculative decoding).
        decoding: DecodingOptions,
        // Guided decoding
        guided_decoding: GuidedDecodingOptions,
        /// Disaggregated serving: `CacheTransceiverConfig`.
        cache_transceiver: CacheTransceiverOptions,
    }

    /// `SamplingConfig`.
    #[derive(Clone, Debug, Default)]
    struct SamplingSpec {
        beam_width: i32,
        top_k: OptI32,
        top_p: OptF32,
        top_p_min: OptF32,
        top_p_reset_ids: OptI32,
        top_p_decay: OptF32,
        seed: OptU64,
        temperature: OptF32,
        min_tokens: OptI32,
        beam_search_diversity_rate: OptF32,
        repetition_penalty: OptF32,
        presence_penalty: OptF32,
        frequency_penalty: OptF32,
        length_penalty: OptF32,
        early_stopping: OptI32,
        no_repeat_ngram_size: OptI32,
        num_return_sequences: OptI32,
        min_p: OptF32,
    }

    /// `Request` with its `OutputConfig`.
    #[derive(Clone, Debug, Default)]
    struct RequestSpec {
        input_token_ids: Vec<i32>,
        max_tokens: i32,
        streaming: bool,
        sampling: SamplingSpec,
        return_log_probs: bool,
        exclude_input_from_output: bool,
        return_perf_metrics: bool,
        end_id: OptI32,
        pad_id: OptI32,
        stop_words: Vec<TokenSeq>,
        bad_words: Vec<TokenSeq>,
        client_id: OptU64,
        priority: f32,
        return_all_generated_tokens: bool,
        /// 0: no deadline.
        allotted_time_ms: u64,
        /// The LoRA adapter.
        lora: LoraSpec,
        /// Lookahead / Eagle / external draft tokens.
        speculative: SpeculativeSpec,
        // Guided decoding
        guided_decoding: GuidedDecodingSpec,
        /// Disaggregated serving: the request's type, and (generation-only) the context phase's params.
        request_type: RequestTypeKind,
        context_phase: ContextPhaseItem,
    }

    // ---- Guided decoding (structured output) ----

    /// `GuidedDecodingConfig::GuidedDecodingBackend`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum GuidedBackendKind {
        Xgrammar,
        #[default]
        Llguidance,
    }

    /// `GuidedDecodingParams::GuideType`.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum GuideKind {
        #[default]
        Json,
        JsonSchema,
        Regex,
        EbnfGrammar,
        StructuralTag,
    }

    /// `GuidedDecodingConfig`; `set == false` leaves guided decoding off.
    #[derive(Clone, Debug, Default)]
    struct GuidedDecodingOptions {
        set: bool,
        backend: GuidedBackendKind,
        encoded_vocab: Vec<String>,
        has_tokenizer_str: bool,
        tokenizer_str: String,
        stop_token_ids: Vec<i32>,
    }

    /// `GuidedDecodingParams`; `set == false` sends an unguided request.
    #[derive(Clone, Debug, Default)]
    struct GuidedDecodingSpec {
        set: bool,
        guide_type: GuideKind,
        has_guide: bool,
        guide: String,
    }

    /// `RequestPerfMetrics`; time points are steady-clock nanoseconds (0: never stamped).
    #[derive(Clone, Copy, Debug, Default)]
    struct PerfMetricsItem {
        arrival_ns: i64,
        first_scheduled_ns: i64,
        first_token_ns: i64,
        last_token_ns: i64,
        kv_transfer_start_ns: i64,
        kv_transfer_end_ns: i64,
        kv_cache_size: u64,
        num_total_allocated_blocks: i32,
        num_new_allocated_blocks: i32,
        num_reused_blocks: i32,
        num_missed_blocks: i32,
        kv_cache_hit_rate: f32,
        /// -1: unset.
        first_iter: i64,
        /// -1: unset.
        last_iter: i64,
        /// -1: unset.
        iter: i64,
        /// `speculativeDecoding`: acceptance rate and draft-token counts.
        spec_acceptance_rate: f32,
        spec_total_accepted_draft_tokens: i32,
        spec_total_draft_tokens: i32,
    }

    /// One `Response`: an error, or a `Result`.
    #[derive(Clone, Debug, Default)]
    struct ResponseItem {
        request_id: u64,
        client_id: OptU64,
        is_error: bool,
        error_message: String,
        is_final: bool,
        is_sequence_final: bool,
        sequence_index: i32,
        output_token_ids: Vec<TokenSeq>,
        finish_reasons: Vec<FinishItem>,
        log_probs: Vec<FloatSeq>,
        cum_log_probs: Vec<f32>,
        decoding_iter: i32,
        /// `avgDecodedTokensPerIter` (> 1 under speculative decoding).
        avg_decoded_tokens_per_iter: f32,
        has_perf_metrics: bool,
        perf_metrics: PerfMetricsItem,
        /// A context-only request's `Result::contextPhaseParams`: one item on its final, none on any other
        /// response (so the per-token responses carry one empty vector, not the params' three).
        context_phase: Vec<ContextPhaseItem>,
    }

    /// `KvCacheStats`.
    #[derive(Clone, Copy, Debug, Default)]
    struct KvCacheStatsItem {
        max_num_blocks: i32,
        free_num_blocks: i32,
        used_num_blocks: i32,
        tokens_per_block: i32,
        alloc_total_blocks: i32,
        alloc_new_blocks: i32,
        reused_blocks: i32,
        missed_blocks: i32,
        cache_hit_rate: f32,
    }

    /// `InflightBatchingStats`.
    #[derive(Clone, Copy, Debug, Default)]
    struct InflightBatchingStatsItem {
        num_scheduled_requests: i32,
        num_context_requests: i32,
        num_gen_requests: i32,
        num_paused_requests: i32,
        num_ctx_tokens: i32,
        micro_batch_id: i32,
        avg_num_decoded_tokens_per_iter: f32,
    }

    /// `StaticBatchingStats`.
    #[derive(Clone, Copy, Debug, Default)]
    struct StaticBatchingStatsItem {
        num_scheduled_requests: i32,
        num_context_requests: i32,
        num_ctx_tokens: i32,
        num_gen_tokens: i32,
        empty_gen_slots: i32,
    }

    /// `SpecDecodingStats` (speculative decoding in one iteration).
    #[derive(Clone, Copy, Debug, Default)]
    struct SpecDecodingStatsItem {
        num_draft_tokens: i64,
        num_accepted_tokens: i64,
        num_requests_with_draft_tokens: i64,
        acceptance_length: f64,
        iter_latency_ms: f64,
        draft_overhead: f64,
    }

    /// `IterationStats`.
    #[derive(Clone, Debug, Default)]
    struct IterationStatsItem {
        timestamp: String,
        iter: u64,
        iter_latency_ms: f64,
        new_active_requests_queue_latency_ms: f64,
        num_new_active_requests: i32,
        num_active_requests: i32,
        num_queued_requests: i32,
        num_completed_requests: i32,
        max_num_active_requests: i32,
        max_batch_size_static: i32,
        max_batch_size_runtime: i32,
        max_num_tokens_static: i32,
        max_num_tokens_runtime: i32,
        gpu_mem_usage: u64,
        cpu_mem_usage: u64,
        pinned_mem_usage: u64,
        has_kv_cache_stats: bool,
        kv_cache_stats: KvCacheStatsItem,
        has_inflight_batching_stats: bool,
        inflight_batching_stats: InflightBatchingStatsItem,
        has_static_batching_stats: bool,
        static_batching_stats: StaticBatchingStatsItem,
        has_spec_decoding_stats: bool,
        spec_decoding_stats: SpecDecodingStatsItem,
    }

    /// `RequestStats`.
    #[derive(Clone, Copy, Debug, Default)]
    struct RequestStatsItem {
        id: u64,
        stage: RequestStageKind,
        /// The upstream value, for `Unknown`.
        stage_raw: i32,
        context_prefill_position: i32,
        num_generated_tokens: i32,
        avg_num_decoded_tokens_per_iter: f32,
        scheduled: bool,
        paused: bool,
        alloc_total_blocks: i32,
        alloc_new_blocks: i32,
        reused_blocks: i32,
        missed_blocks: i32,
        kv_cache_hit_rate: f32,
        /// `disServingStats`: the KV-cache transfer of a disaggregated request.
        has_dis_serving_stats: bool,
        kv_cache_transfer_ms: f64,
        kv_cache_size: u64,
    }

    /// `RequestStatsPerIteration`.
    #[derive(Clone, Debug, Default)]
    struct RequestStatsIteration {
        iter: u64,
        requests: Vec<RequestStatsItem>,
    }

    /// One block of a `KVCacheStoredData` event (token extra ids are dropped: prompt tuning is not used).
    #[derive(Clone, Debug, Default, PartialEq)]
    struct KvStoredBlockItem {
        block_hash: u64,
        token_ids: Vec<i32>,
        lora_id: OptU64,
        cache_level: i32,
        priority: i32,
    }

    /// One `KVCacheEvent`. `kind` names the variant of its data, and only that variant's fields are set.
    #[derive(Clone, Debug, Default, PartialEq)]
    struct KvEventItem {
        event_id: u64,
        kind: KvEventKind,
        window_size: i32,
        attention_dp_rank: OptI32,
        /// Created.
        num_blocks_per_cache_level: Vec<i32>,
        /// Stored: the first block's parent (unset for a sequence's first block).
        parent_hash: OptU64,
        /// Stored.
        blocks: Vec<KvStoredBlockItem>,
        /// Removed.
        block_hashes: Vec<u64>,
        /// Updated: the block, and each field that changed (`*_changed`) with its old and new value.
        updated_block_hash: u64,
        cache_level_changed: bool,
        old_cache_level: i32,
        new_cache_level: i32,
        priority_changed: bool,
        old_priority: i32,
        new_priority: i32,
    }

    // ---- Rust items exposed to C++: none, so no Rust panic can unwind through C++ frames.

    // ---- C++ items exposed to Rust: the const facade; every call that reaches the executor
    // ---- returns Result, so a thrown exception becomes a Rust error instead of a terminate.
    // SAFETY: the signatures below match cpp/include/trtllm/shim.h exactly (cxx checks them when it
    // compiles the generated bridge), and every method is const over an executor that locks itself.
    unsafe extern "C++" {
        include!("trtllm/cpp/include/trtllm/shim.h");

        type ExecutorHandle;

        fn new_executor(engine_dir: &str, options: &ExecutorOptions) -> Result<UniquePtr<ExecutorHandle>>;
        fn enqueue(self: &ExecutorHandle, request: &RequestSpec) -> Result<u64>;
        /// Enqueues every request in one call (`enqueueRequests`); ids in the order given.
        fn enqueue_many(self: &ExecutorHandle, requests: &[RequestSpec]) -> Result<Vec<u64>>;
        /// `awaitResponses`, converted; `received_ns`: the steady clock at hand-over, before converting.
        fn await_responses(self: &ExecutorHandle, timeout_ms: u32, received_ns: &mut i64) -> Result<Vec<ResponseItem>>;
        fn cancel(self: &ExecutorHandle, request_id: u64) -> Result<()>;
        fn iteration_stats(self: &ExecutorHandle) -> Result<Vec<IterationStatsItem>>;
        fn request_stats(self: &ExecutorHandle) -> Result<Vec<RequestStatsIteration>>;
        fn can_enqueue(self: &ExecutorHandle) -> Result<bool>;
        /// Drains the KV-cache events, waiting up to `timeout_ms` for one; empty when events are off.
        fn kv_cache_events(self: &ExecutorHandle, timeout_ms: u32) -> Result<Vec<KvEventItem>>;
        fn shutdown(self: &ExecutorHandle) -> Result<()>;
        /// The simulator's LoRA cache counters (unavailable on a real executor).
        fn lora_cache_counts(self: &ExecutorHandle) -> Result<LoraCacheCountsItem>;
        /// The simulated executor's GPU telemetry key (0 on a real executor).
        fn sim_telemetry_key(self: &ExecutorHandle) -> Result<u64>;

        // ---- Scheduled arrivals on the simulator's virtual clock (simulated build only: the
        // ---- real build's versions fail). See cpp/sim/src/sim_control.h.
        /// The executor's simulated time, steady-clock nanoseconds.
        fn sim_now_ns(self: &ExecutorHandle) -> Result<i64>;
        /// Enqueues a request arriving at `arrival_ns`, or (with `after_request` non-zero) at that request's
        /// end plus its follow-up delay; a `follow_up_delay_ns` of zero or more keeps room for a follow-up.
        fn sim_enqueue_at(
            self: &ExecutorHandle,
            request: &RequestSpec,
            arrival_ns: i64,
            after_request: u64,
            follow_up_delay_ns: i64,
        ) -> Result<u64>;
        /// Holds back iterations starting at or after `bound_ns` until released; returns the key.
        fn sim_hold_arrivals(self: &ExecutorHandle, bound_ns: i64) -> Result<u64>;
        /// Releases a hold (its key) or a follow-up lease (the request id).
        fn sim_release_arrivals(self: &ExecutorHandle, key: u64) -> Result<()>;
        /// Sets the link the simulator's KV transfers into this executor cross (simulated build only).
        fn sim_set_kv_link(self: &ExecutorHandle, bandwidth_gb_s: f64, latency_us: f64, efficiency: f64) -> Result<()>;

        fn library_version() -> String;
        fn backend_kind() -> String;
        fn steady_clock_now_ns() -> i64;
    }
}

// SAFETY: `ExecutorHandle` is a const facade over `tensorrt_llm::executor::Executor`, whose entry
// points (enqueue, cancel, await, stats, shutdown) each take the executor's own internal mutexes, as
// NVIDIA's benchmark relies on when it calls them from three threads at once. The facade itself holds
// only a shared_ptr set once at construction, so moving it to or sharing it between threads is sound.
unsafe impl Send for sys::ExecutorHandle {}
// SAFETY: as above: every method takes `&self` and synchronises inside the executor.
unsafe impl Sync for sys::ExecutorHandle {}
