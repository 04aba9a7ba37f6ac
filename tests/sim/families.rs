//! Model families read from config.json files (Hugging Face and TensorRT-LLM forms): the resolved
//! description, the parameter count against the published size, the operation list and the memory budget.

use serde_json::{Value, json};
use trtllm::sim::{
    ConfigJson, EngineDescription, Family, GpuPreset, KvCacheDtype, ModelPreset, PerfModel, SimError, SimulatedEngine,
    TimingSpec, WeightDtype, hf_config,
};

/// A Hugging Face config.json of a decoder: the common members plus `extra`.
fn hf(architecture: &str, shape: [usize; 6], vocab: usize, extra: Value) -> Value {
    let [hidden, layers, heads, kv_heads, intermediate, max_position] = shape;
    let mut config = json!({
        "architectures": [architecture], "torch_dtype": "bfloat16", "vocab_size": vocab, "hidden_size": hidden,
        "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "intermediate_size": intermediate, "max_position_embeddings": max_position, "rope_theta": 10000.0,
        "rms_norm_eps": 1e-5, "tie_word_embeddings": false
    });
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    config
}

/// Every family, as its published Hugging Face config, with the publisher's parameter count (billions).
fn families() -> Vec<(&'static str, Family, Value, f64)> {
    vec![
        ("Llama 2 7B", Family::Llama, hf("LlamaForCausalLM", [4096, 32, 32, 32, 11008, 4096], 32000, json!({})), 6.74),
        ("Llama 3 8B", Family::Llama, hf("LlamaForCausalLM", [4096, 32, 32, 8, 14336, 8192], 128256, json!({})), 8.03),
        (
            "Llama 3.2 3B",
            Family::Llama,
            hf("LlamaForCausalLM", [3072, 28, 24, 8, 8192, 131072], 128256, json!({"tie_word_embeddings": true})),
            3.21,
        ),
        (
            "Mistral 7B v0.1",
            Family::Mistral,
            hf("MistralForCausalLM", [4096, 32, 32, 8, 14336, 32768], 32000, json!({"sliding_window": 4096})),
            7.24,
        ),
        (
            "Mixtral 8x7B",
            Family::Mixtral,
            hf(
                "MixtralForCausalLM",
                [4096, 32, 32, 8, 14336, 32768],
                32000,
                json!({"num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null}),
            ),
            46.7,
        ),
        (
            "Qwen2-7B",
            Family::Qwen2,
            hf(
                "Qwen2ForCausalLM",
                [3584, 28, 28, 4, 18944, 32768],
                152064,
                json!({"sliding_window": 131072, "use_sliding_window": false}),
            ),
            7.62,
        ),
        (
            "Qwen3-8B",
            Family::Qwen3,
            hf(
                "Qwen3ForCausalLM",
                [4096, 36, 32, 8, 12288, 40960],
                151936,
                json!({"head_dim": 128, "attention_bias": false}),
            ),
            8.19,
        ),
        (
            "Qwen1.5-MoE-A2.7B",
            Family::Qwen2Moe,
            hf(
                "Qwen2MoeForCausalLM",
                [2048, 24, 16, 16, 5632, 8192],
                151936,
                json!({"num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
                       "shared_expert_intermediate_size": 5632}),
            ),
            14.3,
        ),
        (
            "Qwen2-57B-A14B",
            Family::Qwen2Moe,
            hf(
                "Qwen2MoeForCausalLM",
                [3584, 28, 28, 4, 18944, 32768],
                151936,
                json!({"num_experts": 64, "num_experts_per_tok": 8, "moe_intermediate_size": 2560,
                       "shared_expert_intermediate_size": 20480}),
            ),
            57.4,
        ),
        (
            "Qwen3-30B-A3B",
            Family::Qwen3Moe,
            hf(
                "Qwen3MoeForCausalLM",
                [2048, 48, 32, 4, 6144, 40960],
                151936,
                json!({"head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768}),
            ),
            30.5,
        ),
    ]
}

fn resolve_hf(config: &Value) -> EngineDescription {
    EngineDescription::resolve(&hf_config::engine_config(config).unwrap()).unwrap()
}

#[test]
fn every_family_resolves_to_its_published_size() {
    for (name, family, config, published) in families() {
        let d = resolve_hf(&config);
        assert_eq!(d.family(), Some(family), "{name}");
        let billions = d.shape().parameter_count() / 1e9;
        assert!((billions / published - 1.0).abs() < 0.02, "{name}: {billions:.2}B against the published {published}B");
        assert_eq!(d.shape().qkv_bias, matches!(family, Family::Qwen2 | Family::Qwen2Moe), "{name}");
        assert_eq!(d.shape().qk_norm, matches!(family, Family::Qwen3 | Family::Qwen3Moe), "{name}");
        assert_eq!(d.shape().moe.is_some(), family.is_moe(), "{name}");
        assert_eq!(d.shape().sliding_window, (family == Family::Mistral).then_some(4096), "{name}");
        // Defaults applied once: trtllm-build's limits, one GPU, 16-bit everything.
        assert_eq!(
            (d.limits().max_batch_size, d.limits().max_num_tokens, d.parallelism().tp),
            (2048, 8192, 1),
            "{name}"
        );
        assert_eq!(d.limits().max_seq_len, d.context_length(), "{name}");
        assert_eq!(d.precision().dtype, "bfloat16");
    }
    // The Llama 2 config states no KV heads... and none is multi-head attention.
    let mut mha = families()[0].2.clone();
    mha.as_object_mut().unwrap().remove("num_key_value_heads");
    assert_eq!(resolve_hf(&mha).shape().num_kv_heads, 32);
}

#[test]
fn the_tensorrt_llm_form_resolves_like_the_hugging_face_form() {
    let trtllm = json!({"version": "1.2.0", "pretrained_config": {
        "architecture": "MixtralForCausalLM", "dtype": "bfloat16", "vocab_size": 32000, "hidden_size": 4096,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_size": 128,
        "intermediate_size": 14336, "max_position_embeddings": 32768,
        "moe": {"num_experts": 8, "top_k": 2, "normalization_mode": 1},
        "mapping": {"world_size": 4, "tp_size": 4, "pp_size": 1, "moe_tp_size": 2, "moe_ep_size": 2},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}},
        "build_config": {"max_batch_size": 256, "max_seq_len": 8192, "max_input_len": 4096}});
    let d = EngineDescription::resolve(&serde_json::from_value::<ConfigJson>(trtllm).unwrap()).unwrap();
    let mixtral = &families()[4].2;
    assert_eq!(d.shape(), resolve_hf(mixtral).shape());
    assert_eq!((d.parallelism().tp, d.parallelism().moe_tp, d.parallelism().moe_ep), (4, 2, 2));
    assert_eq!((d.limits().max_batch_size, d.limits().max_seq_len), (256, 8192));
    assert_eq!(d.precision().weight_bytes(), 1.0);
    assert_eq!(WeightDtype::of(d.precision()), Some(WeightDtype::Fp8));
    assert_eq!(KvCacheDtype::of(d.precision()), KvCacheDtype::Fp8);
}

#[test]
fn unknown_architectures_and_bad_expert_splits_are_refused() {
    let gemma = hf("GemmaForCausalLM", [3072, 28, 16, 16, 24576, 8192], 256000, json!({}));
    let d = resolve_hf(&gemma);
    // The loader still reads a real engine of it; the timing model refuses it, naming what it models.
    assert_eq!(d.family(), None);
    let err = TimingSpec::from_description(&d).unwrap_err().to_string();
    for supported in ["LlamaForCausalLM", "MistralForCausalLM", "MixtralForCausalLM", "Qwen3MoeForCausalLM"] {
        assert!(err.contains(supported), "{err}");
    }
    assert!(err.contains("GemmaForCausalLM"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), gemma.to_string()).unwrap();
    let err = ModelPreset::from_arg(dir.path().to_str().unwrap()).unwrap_err().to_string();
    assert!(err.contains("is not modelled (supported: LlamaForCausalLM"), "{err}");

    let split = |mapping: Value| {
        let mut json: Value = serde_json::to_value(hf_config::engine_config(&families()[4].2).unwrap()).unwrap();
        json["pretrained_config"]["mapping"] = mapping;
        EngineDescription::resolve(&serde_json::from_value(json).unwrap()).map(|_| ()).unwrap_err().to_string()
    };
    let e = split(json!({"tp_size": 4, "moe_tp_size": 2, "moe_ep_size": 1}));
    assert!(e.contains("moe_tp_size (2) x moe_ep_size (1) must equal tp_size (4)"), "{e}");
    let e = split(json!({"tp_size": 16, "moe_ep_size": 16}));
    assert!(e.contains("moe_ep_size (16) must divide the 8 experts"), "{e}");
    let mut no_experts = families()[4].2.clone();
    no_experts.as_object_mut().unwrap().remove("num_local_experts");
    let e = EngineDescription::resolve(&hf_config::engine_config(&no_experts).unwrap()).unwrap_err().to_string();
    assert!(e.contains("MixtralForCausalLM is a Mixture-of-Experts architecture"), "{e}");
}

fn op_names(model: &PerfModel) -> Vec<&'static str> {
    model.ops().iter().map(|op| op.name).collect()
}

fn model(config: &Value, gpu: &str) -> PerfModel {
    PerfModel::from_spec(TimingSpec::from_description(&resolve_hf(config)).unwrap(), GpuPreset::by_id(gpu).unwrap())
        .unwrap()
}

#[test]
fn each_family_has_its_operations() {
    let all = families();
    let llama = op_names(&model(&all[1].2, "h100-sxm"));
    assert!(llama.contains(&"gate/up projection") && !llama.iter().any(|n| n.starts_with("MoE")));
    assert!(!llama.contains(&"Q/K RMSNorm"));
    assert!(op_names(&model(&all[6].2, "h100-sxm")).contains(&"Q/K RMSNorm"));
    let mixtral = op_names(&model(&all[4].2, "h100-sxm"));
    for name in [
        "MoE router",
        "MoE top-k softmax",
        "MoE permute",
        "expert gate/up (grouped)",
        "expert down (grouped)",
        "MoE finalize",
    ] {
        assert!(mixtral.contains(&name), "{name}: {mixtral:?}");
    }
    assert!(!mixtral.contains(&"gate/up projection") && !mixtral.contains(&"shared expert gate/up"));
    assert!(op_names(&model(&all[7].2, "h100-sxm")).contains(&"shared expert gate/up"));
    // Mistral attends to its 4,096-token window: a longer cache costs no more per step.
    let mistral = model(&all[3].2, "h100-sxm");
    assert_eq!(mistral.decode_step_ms(16_000), mistral.decode_step_ms(4096));
    assert!(mistral.decode_step_ms(4096) > mistral.decode_step_ms(100));
    // Resident weights are the op list's weight bytes plus the embedding: the parameter count in 16 bits.
    for (name, _, config, _) in &all {
        let m = model(config, "h200");
        let params = resolve_hf(config).shape().parameter_count();
        let ratio = m.weight_bytes_per_gpu() / (2.0 * params);
        assert!((ratio - 1.0).abs() < 0.001, "{name}: {ratio}");
    }
}

#[test]
fn moe_weight_traffic_grows_with_the_experts_a_batch_touches() {
    let mixtral = model(&families()[4].2, "h100-sxm");
    let moe_ms = |batch: f64| {
        mixtral.iteration(trtllm::sim::BatchWork::default().add_generation(1000.0, batch)).moe_ms / batch.max(1.0)
    };
    // One token reads 2 of 8 experts; 64 tokens touch nearly all of them, so the cost per token falls.
    assert!(moe_ms(1.0) > 3.0 * moe_ms(64.0), "{} vs {}", moe_ms(1.0), moe_ms(64.0));
    let single = 1000.0 / mixtral.decode_step_ms(1000);
    assert!(single < mixtral.bandwidth_bound_tokens_per_s(), "{single}");
    // 8 experts of 46.7B parameters: a token reads about 12.9B of them.
    let dense_bound = GpuPreset::by_id("h100-sxm").unwrap().bandwidth_gb_s * 1e9 / mixtral.weight_bytes_per_gpu();
    assert!(mixtral.bandwidth_bound_tokens_per_s() > 3.0 * dense_bound);

    // Expert parallelism: the same engine over 4 GPUs as moe_ep 4 or moe_tp 4, and a stated imbalance.
    let on_four = |moe_ep: usize, imbalance: f64| {
        let engine = SimulatedEngine::builder()
            .model(ModelPreset::by_id("mixtral-8x7b").unwrap())
            .gpu("h100-sxm")
            .tensor_parallel(4)
            .expert_parallel(moe_ep)
            .moe_imbalance(imbalance)
            .build();
        let m = engine.perf_model().unwrap();
        m.iteration(trtllm::sim::BatchWork::default().add_context(4096.0, 0.0, true)).moe_ms
    };
    assert!(on_four(4, 1.5) > on_four(4, 1.0));
    assert_eq!(on_four(1, 1.5), on_four(1, 1.0), "without expert parallelism every rank takes every token");
}

#[test]
fn memory_budgets_hold_when_tight() {
    let build = |model: &str, gpu: &str, tp: usize, dtype: WeightDtype, max_seq_len: usize| {
        SimulatedEngine::builder()
            .model(ModelPreset::by_id(model).unwrap())
            .gpu(gpu)
            .tensor_parallel(tp)
            .dtype(dtype)
            .max_batch_size(2048)
            .max_seq_len(max_seq_len)
            .build()
    };
    // Llama-3.1-70B in FP8 on one 80 GB H100: the 16-bit embedding and head, the runtime's buffers and a
    // KV pool for well under one full-length sequence.
    let engine = build("llama-3.1-70b", "h100-sxm", 1, WeightDtype::Fp8, 131072);
    let model = engine.perf_model().unwrap();
    let budget = model.memory_budget(model.spec().limits(), 0.9);
    let gib = |b: f64| b / (1u64 << 30) as f64;
    assert!((gib(budget.weight_bytes()) - 67.7).abs() < 0.2, "{budget}");
    let text = budget.to_string();
    for line in
        ["CUDA context and kernels", "engine activations", "decoder buffers", "sampling workspace", "cuBLAS workspace"]
    {
        assert!(text.contains(line), "{text}");
    }
    assert!(budget.kv_tokens > 5_000 && budget.kv_tokens < 8_000, "{text}");
    assert!(budget.max_full_sequences < 1.0, "{text}");
    // The decoder's buffers grow with max_batch_size x max_seq_len: a shorter engine keeps more KV.
    let short = build("llama-3.1-70b", "h100-sxm", 1, WeightDtype::Fp8, 8192).perf_model().unwrap();
    assert!(short.memory_budget(short.spec().limits(), 0.9).kv_tokens > budget.kv_tokens);
    // Llama-3.1-405B in BF16 on 8 H100s does not load, and the refusal shows the budget.
    let err = build("llama-3.1-405b", "h100-sxm", 8, WeightDtype::Bf16, 8192).perf_model().unwrap_err();
    assert!(matches!(err, SimError::DoesNotFit { .. }), "{err}");
    assert!(err.to_string().contains("weights") && err.to_string().contains("decoder buffers"), "{err}");
    // ... and in FP8 it does, with a sliding-window Mistral holding sequences of its window only.
    build("llama-3.1-405b", "h100-sxm", 8, WeightDtype::Fp8, 8192).perf_model().unwrap();
    let mistral = build("mistral-7b", "h100-sxm", 1, WeightDtype::Bf16, 32768).perf_model().unwrap();
    let b = mistral.memory_budget(mistral.spec().limits(), 0.9);
    assert!((b.max_full_sequences - b.kv_tokens as f64 / 4096.0).abs() < 1e-9);
}

#[test]
fn runtime_buffers_are_sized_as_tensorrt_llm_sizes_them() {
    let engine = |tp: usize, beam: usize| {
        SimulatedEngine::builder()
            .model(ModelPreset::by_id("llama-3.1-70b").unwrap())
            .gpu("h100-sxm")
            .tensor_parallel(tp)
            .dtype(WeightDtype::Fp8)
            .max_batch_size(256)
            .max_beam_width(beam)
            .max_seq_len(8192)
            .build()
            .perf_model()
            .unwrap()
    };
    let line = |model: &trtllm::sim::PerfModel, what: &str| {
        let budget = model.memory_budget(model.spec().limits(), 0.9);
        budget.lines.iter().find(|l| l.what.starts_with(what)).map(|l| l.bytes)
    };
    let one = engine(1, 1);
    let vocab = 128_256.0;
    // The decoder state: ids, parent ids and two layouts of log-probabilities per slot and position, and a
    // 16-bit embedding bias per slot; beam search adds the gathered ids.
    let decoder = 256.0 * 8192.0 * 16.0 + 256.0 * vocab * 2.0;
    assert_eq!(line(&one, "decoder buffers"), Some(decoder));
    let beams = engine(1, 4);
    assert_eq!(line(&beams, "decoder buffers"), Some(1024.0 * 8192.0 * 20.0 + 256.0 * vocab * 2.0));
    // The penalty layer's int32 occurrence table and the Air top-P buffers, per slot.
    let top_p = 16.0 * (vocab / 32.0) + 8.0 * 2048.0;
    assert_eq!(line(&one, "sampling workspace"), Some(256.0 * (vocab * 4.0 + top_p)));
    assert_eq!(line(&one, "cuBLAS workspace"), Some(32.0 * 1024.0 * 1024.0));
    // One GPU has no all-reduce or NCCL; two hold ping and pong buffers at the 16 MB-per-rank cap and three
    // Lamport buffers, eight the 8 MB cap.
    assert_eq!(line(&one, "custom all-reduce"), None);
    assert_eq!(line(&one, "NCCL"), None);
    let lamport = |tp: f64| 3.0 * tp * 16.0 * 8192.0 * 2.0;
    assert_eq!(line(&engine(2, 1), "custom all-reduce"), Some(2.0 * 2.0 * 16e6 + lamport(2.0)));
    assert_eq!(line(&engine(8, 1), "custom all-reduce"), Some(2.0 * 8.0 * 8e6 + lamport(8.0)));
    assert!(line(&engine(2, 1), "NCCL").is_some());
}

#[test]
fn qwen2_moe_layers_without_experts_are_dense() {
    let qwen = |extra: Value| {
        let mut config = families()[7].2.clone();
        for (key, value) in extra.as_object().unwrap() {
            config[key] = value.clone();
        }
        config
    };
    let all_sparse = resolve_hf(&qwen(json!({})));
    assert_eq!(all_sparse.shape().moe.unwrap().dense_layers, 0);
    // Layers 0 and 1 dense by name, and every odd-numbered (1-based) layer skipped by a step of 2: 13 of 24.
    let mixed_config = qwen(json!({"mlp_only_layers": [0, 1], "decoder_sparse_step": 2}));
    let mixed = resolve_hf(&mixed_config);
    assert_eq!(mixed.shape().moe.unwrap().dense_layers, 13);
    assert_eq!(mixed.shape().mlp_layers(), (13, 11));
    // Thirteen layers trade the 60 experts, router and shared expert for one dense MLP of intermediate_size.
    let (h, moe) = (2048.0, all_sparse.shape().moe.unwrap());
    let sparse_layer = 60.0 * 3.0 * h * 1408.0 + h * 60.0 + 3.0 * h * 5632.0 + h;
    let dense_layer = 3.0 * h * 5632.0;
    let expected = all_sparse.shape().parameter_count() - 13.0 * (sparse_layer - dense_layer);
    assert!((mixed.shape().parameter_count() - expected).abs() < 1.0);
    assert_eq!(moe.num_experts, 60);
    // The operation list runs the dense MLP in 13 layers and the experts in 11, and its weights follow.
    let ops = model(&mixed_config, "h100-sxm");
    let count = |name: &str| ops.ops().iter().find(|op| op.name == name).map(|op| op.count);
    assert_eq!(count("gate/up projection"), Some(13.0));
    assert_eq!(count("down projection"), Some(13.0));
    assert_eq!(count("expert gate/up (grouped)"), Some(11.0));
    assert_eq!(count("MoE router"), Some(11.0));
    assert_eq!(count("shared expert down"), Some(11.0));
    assert_eq!(count("QKV projection"), Some(24.0));
    let sparse_model = model(&qwen(json!({})), "h100-sxm");
    assert!(ops.weight_bytes_per_gpu() < sparse_model.weight_bytes_per_gpu());
    let saved = sparse_model.weight_bytes_per_gpu() - ops.weight_bytes_per_gpu();
    // (The shared expert's hidden -> 1 gate is a parameter but no operation of its own.)
    assert!((saved - 13.0 * (sparse_layer - dense_layer) * 2.0).abs() <= 13.0 * 2.0 * h, "{saved}");
    // A simulated engine writes the dense layers into its config.json and reads back the same shape.
    let preset = ModelPreset::from_config("qwen-mixed", &mixed_config).unwrap();
    let engine = SimulatedEngine::builder().model(&preset).gpu("h100-sxm").build();
    assert_eq!(engine.perf_model().unwrap().spec().shape(), mixed.shape());
    // Layers that do not exist, or no layer left with experts, are refused.
    for (extra, message) in [
        (json!({"mlp_only_layers": [24]}), "mlp_only_layers names layer 24 of a 24-layer model"),
        (json!({"decoder_sparse_step": 25}), "leave no layer with experts"),
        (json!({"decoder_sparse_step": 0}), "decoder_sparse_step"),
    ] {
        let err = EngineDescription::resolve(&hf_config::engine_config(&qwen(extra)).unwrap()).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
}
