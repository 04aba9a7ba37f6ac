//! One model argument: `trtllm plan` and `trtllm sim build` take a preset id, a config.json or a
//! model directory; a config's model is named by the config or its directory, never "config.json";
//! configs are checked as the engine would check them.

use std::path::{Path, PathBuf};

use crate::common::cli::{read_json, stderr, trtllm};

/// TinyLlama-1.1B's Hugging Face config.json (no `_name_or_path`), written to `<root>/<name>/config.json`.
fn write_model(root: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut config = serde_json::json!({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "torch_dtype": "bfloat16", "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 22,
        "num_attention_heads": 32, "num_key_value_heads": 4, "intermediate_size": 5632,
        "max_position_embeddings": 2048, "rope_theta": 10000.0, "rms_norm_eps": 1e-05});
    edit(&mut config);
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir.join("config.json")
}

#[test]
fn plan_takes_a_config_json_and_prints_a_build_command_that_takes_it_too() {
    let root = tempfile::tempdir().unwrap();
    let config = write_model(root.path(), "my-tiny-llama", |_| {});
    let out = root.path().join("plan");
    let args = ["plan", "--model", config.to_str().unwrap(), "--gpu", "rtx-a6000", "--slo", "ttft:p95:5000"];
    let tail = ["--input-len", "64", "--output-len", "8", "--concurrency", "1", "--num-prompts", "4", "--tp", "1"];
    let knobs = ["--max-batch-size", "4", "--max-num-tokens", "512", "--chunked-context", "on", "--no-fp8"];
    let rest = ["--scheduler-policy", "guaranteed-no-evict", "--quiet", "--exhaustive", "--output-dir"];
    let mut all: Vec<&str> = [&args[..], &tail, &knobs, &rest].concat();
    all.push(out.to_str().unwrap());
    let plan = trtllm(&all);
    let stdout = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(plan.status.success(), "{stdout}\n{}", stderr(&plan));
    let build_line = format!("trtllm sim build --model {} --gpu rtx-a6000", config.display());
    assert!(stdout.contains(&build_line), "{stdout}");

    // The printed command's model argument builds an engine named after the model's directory.
    let built_name = |model: &Path, engine: &Path| {
        let (model_arg, engine_arg) = (model.to_str().unwrap(), engine.to_str().unwrap());
        let built = trtllm(&["sim", "build", "--gpu", "rtx-a6000", "--model", model_arg, "--output", engine_arg]);
        assert!(built.status.success(), "{}", stderr(&built));
        read_json(&engine.join("config.json"))["pretrained_config"]["model_name"].clone()
    };
    assert_eq!(built_name(&config, &root.path().join("engine")), "my-tiny-llama");
    // A model directory is the same model, and a config that names itself keeps its name.
    let named = write_model(root.path(), "renamed", |c| c["_name_or_path"] = "org/tiny".into());
    for (model, name) in [(config.parent().unwrap().to_path_buf(), "my-tiny-llama"), (named, "org/tiny")] {
        let engine = root.path().join(format!("engine-{}", name.replace('/', "-")));
        assert_eq!(built_name(&model, &engine), name);
    }
}

#[test]
fn configs_the_engine_would_refuse_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let odd = write_model(root.path(), "odd-heads", |c| {
        c["hidden_size"] = 3027.into();
        c["num_attention_heads"] = 24.into();
        c["num_key_value_heads"] = 8.into();
    });
    let misspelled = write_model(root.path(), "misspelled", |c| {
        let heads = c.as_object_mut().unwrap().remove("num_key_value_heads").unwrap();
        c["num_key_vlaue_heads"] = heads;
    });
    let cases = [
        (odd, "hidden_size (3027) is not a multiple of num_attention_heads (24)"),
        (misspelled, "\"num_key_vlaue_heads\" (did you mean \"num_key_value_heads\"?)"),
    ];
    for (config, expected) in cases {
        let engine = root.path().join("engine");
        let built = trtllm(&[
            "sim",
            "build",
            "--gpu",
            "rtx-a6000",
            "--model",
            config.to_str().unwrap(),
            "--output",
            engine.to_str().unwrap(),
        ]);
        assert!(!built.status.success() && stderr(&built).contains(expected), "{}", stderr(&built));
        assert!(!engine.exists());
    }
}

#[test]
fn a_checkpoint_directory_given_as_an_engine_says_how_to_build_one() {
    let root = tempfile::tempdir().unwrap();
    let checkpoint = write_model(root.path(), "checkpoint", |_| {});
    let dir = checkpoint.parent().unwrap().to_str().unwrap();
    let out = root.path().join("bench");
    let bench = trtllm(&["bench", "--engine-dir", dir, "--num-prompts", "1", "--output-dir", out.to_str().unwrap()]);
    let err = stderr(&bench);
    assert!(!bench.status.success(), "{err}");
    assert!(err.contains("Hugging Face checkpoint") && err.contains("trtllm sim build --model"), "{err}");
    assert!(!err.contains("version is missing"), "{err}");
}
