// The real-mode check's stand-in for libnvinfer_plugin_tensorrt_llm.so: the one symbol the shim calls, which in
// TensorRT-LLM registers the plugin creators with TensorRT (there are no plugins to register here).
extern "C" bool initTrtLlmPlugins(void* /*logger*/, char const* /*libNamespace*/)
{
    return true;
}
