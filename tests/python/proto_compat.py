"""Checks that our .proto files are wire-compatible with the gateway's published stubs.

Usage: proto_compat.py OUR_DESCRIPTOR_SET

OUR_DESCRIPTOR_SET is an encoded google.protobuf.FileDescriptorSet of our protocol files
(the Rust test writes `trtllm::proto::FILE_DESCRIPTOR_SET` to a temporary file).

Two checks:
1. Descriptors: every message, enum and service of the upstream `trtllm_service.proto`
   and `common.proto` that we declare must agree with ours on everything that shapes the
   bytes on the wire or the generated API (names, numbers, types, labels, proto3
   `optional`, oneofs, enum values, reserved numbers, RPC signatures). Upstream types we
   do not declare are listed; a missing one is an error if the service can reach it.
2. Round trip: messages built with the upstream classes are parsed by classes made from
   our descriptors (and the other way round). They must decode with no unknown fields,
   the same field names and values, and re-encode to the same bytes.

Exit status: 0 all good, 1 a mismatch was found, 2 bad usage or missing packages.
"""

import sys

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
    from google.protobuf.unknown_fields import UnknownFieldSet
    from smg_grpc_proto.generated import common_pb2 as up_common
    from smg_grpc_proto.generated import trtllm_service_pb2 as up_trtllm
except ImportError as err:  # pragma: no cover - environment problem, not a finding
    print(f"proto_compat: cannot import protobuf or smg_grpc_proto: {err}", file=sys.stderr)
    sys.exit(2)

FDP = descriptor_pb2.FieldDescriptorProto
TYPE_NAMES = {number: name for name, number in FDP.Type.items()}
LABEL_NAMES = {number: name for name, number in FDP.Label.items()}
SERVICE = "trtllm.TrtllmService"
# Fields only this server declares, at numbers the gateway's protocol leaves unused (1000 up):
# (message, number) -> name. Upstream clients must read our messages as if they were absent.
OUR_EXTENSIONS = {
    ("trtllm.GenerateComplete", 1000): "kv_handoff",
    ("trtllm.GetServerInfoResponse", 1000): "disaggregation",
}


class Report:
    """Collects findings; only errors make the run fail."""

    def __init__(self):
        self.errors = []
        self.notes = []

    def error(self, where, what):
        self.errors.append(f"{where}: {what}")

    def note(self, where, what):
        self.notes.append(f"{where}: {what}")


def file_proto(module):
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    return proto


def index_files(files):
    """Maps each fully qualified message, enum and service name to its descriptor proto."""
    messages, enums, services = {}, {}, {}

    def walk_message(prefix, msg):
        name = f"{prefix}.{msg.name}"
        messages[name] = msg
        for nested in msg.nested_type:
            walk_message(name, nested)
        for enum in msg.enum_type:
            enums[f"{name}.{enum.name}"] = enum

    for f in files:
        prefix = f.package
        for msg in f.message_type:
            walk_message(prefix, msg)
        for enum in f.enum_type:
            enums[f"{prefix}.{enum.name}"] = enum
        for svc in f.service:
            services[f"{prefix}.{svc.name}"] = svc
    return messages, enums, services


def reachable_from_service(services, messages):
    """Fully qualified names of every message and enum the service's RPCs can carry."""
    seen = set()
    stack = []
    for method in services.get(SERVICE, descriptor_pb2.ServiceDescriptorProto()).method:
        stack += [method.input_type.lstrip("."), method.output_type.lstrip(".")]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for field in getattr(messages.get(name), "field", []):
            if field.type_name:
                stack.append(field.type_name.lstrip("."))
    return seen


def oneof_of(msg, field):
    """Name of the real oneof holding `field`, or None (proto3 `optional` is not a real oneof)."""
    if field.HasField("oneof_index") and not field.proto3_optional:
        return msg.oneof_decl[field.oneof_index].name
    return None


def reserved_numbers(msg):
    return {n for r in msg.reserved_range for n in range(r.start, r.end)}


def describe_field(msg, field):
    return {
        "name": field.name,
        "type": TYPE_NAMES[field.type],
        "type_name": field.type_name,
        "label": LABEL_NAMES[field.label],
        "proto3_optional": field.proto3_optional,
        "oneof": oneof_of(msg, field),
        "options": field.options.SerializeToString(),
    }


def compare_message(report, name, up, ours):
    up_fields = {f.number: describe_field(up, f) for f in up.field}
    our_fields = {f.number: describe_field(ours, f) for f in ours.field}
    for number in sorted(up_fields.keys() | our_fields.keys()):
        where = f"message {name} field #{number}"
        if number not in our_fields:
            report.error(where, f"upstream has `{up_fields[number]['name']}`, we have nothing")
        elif number not in up_fields:
            if OUR_EXTENSIONS.get((name, number)) == our_fields[number]["name"]:
                report.note(where, f"our extension `{our_fields[number]['name']}` (upstream has nothing there)")
            else:
                report.error(where, f"we have `{our_fields[number]['name']}`, upstream has nothing")
        else:
            for key, up_value in up_fields[number].items():
                if our_fields[number][key] != up_value:
                    report.error(where, f"{key}: upstream {up_value!r}, ours {our_fields[number][key]!r}")
    up_oneofs = {oneof_of(up, f) for f in up.field} - {None}
    our_oneofs = {oneof_of(ours, f) for f in ours.field} - {None}
    if up_oneofs != our_oneofs:
        report.error(f"message {name}", f"oneofs: upstream {sorted(up_oneofs)}, ours {sorted(our_oneofs)}")
    if reserved_numbers(up) != reserved_numbers(ours):
        report.error(
            f"message {name}",
            f"reserved numbers: upstream {sorted(reserved_numbers(up))}, ours {sorted(reserved_numbers(ours))}",
        )
    if set(up.reserved_name) != set(ours.reserved_name):
        report.error(
            f"message {name}",
            f"reserved names: upstream {sorted(up.reserved_name)}, ours {sorted(ours.reserved_name)}",
        )


def compare_enum(report, name, up, ours):
    up_values = {(v.name, v.number) for v in up.value}
    our_values = {(v.name, v.number) for v in ours.value}
    for value_name, number in sorted(up_values - our_values):
        report.error(f"enum {name}", f"upstream value {value_name}={number} missing or different in ours")
    for value_name, number in sorted(our_values - up_values):
        report.error(f"enum {name}", f"our value {value_name}={number} is not upstream's")


def compare_service(report, name, up, ours):
    def signature(method):
        return (method.input_type, method.output_type, method.client_streaming, method.server_streaming)

    up_methods = {m.name: signature(m) for m in up.method}
    our_methods = {m.name: signature(m) for m in ours.method}
    for rpc in sorted(up_methods.keys() | our_methods.keys()):
        where = f"service {name} rpc {rpc}"
        if rpc not in our_methods:
            report.error(where, "missing in ours")
        elif rpc not in up_methods:
            report.error(where, "not in upstream")
        elif up_methods[rpc] != our_methods[rpc]:
            report.error(
                where,
                "(input, output, client_streaming, server_streaming): "
                f"upstream {up_methods[rpc]}, ours {our_methods[rpc]}",
            )


def compare_descriptors(report, up_files, our_files):
    up_msgs, up_enums, up_svcs = index_files(up_files)
    our_msgs, our_enums, our_svcs = index_files(our_files)
    needed = reachable_from_service(up_svcs, up_msgs)
    if SERVICE not in our_svcs:
        report.error(f"service {SERVICE}", "missing in ours")

    for kind, ups, ours, compare in (
        ("message", up_msgs, our_msgs, compare_message),
        ("enum", up_enums, our_enums, compare_enum),
        ("service", up_svcs, our_svcs, compare_service),
    ):
        for name in sorted(ups):
            if name in ours:
                compare(report, name, ups[name], ours[name])
            elif name in needed or kind == "service":
                report.error(f"{kind} {name}", "used by the service upstream but not declared by us")
            else:
                report.note(f"{kind} {name}", "upstream only (the trtllm service does not use it)")
        for name in sorted(set(ours) - set(ups)):
            report.error(f"{kind} {name}", "declared by us but not upstream")
    checked = len(set(up_msgs) & set(our_msgs)) + len(set(up_enums) & set(our_enums))
    return checked


# ---------------------------------------------------------------------------------------
# Round trip
# ---------------------------------------------------------------------------------------


def sample_messages():
    """Upstream messages with as many fields set as the wire lets us exercise."""
    t, c = up_trtllm, up_common
    request = t.GenerateRequest(
        request_id="req-7",
        tokenized=t.TokenizedInput(original_text="hi", input_token_ids=[1, 300, 70000], query_token_ids=[5]),
        sampling_config=t.SamplingConfig(
            beam_width=1, num_return_sequences=2, top_k=40, top_p=0.9, top_p_min=0.1, top_p_reset_ids=3,
            top_p_decay=0.5, seed=2**63 + 5, temperature=0.7, min_tokens=4, beam_search_diversity_rate=0.25,
            repetition_penalty=1.1, presence_penalty=0.5, frequency_penalty=-0.5, prompt_ignore_length=2,
            length_penalty=1.5, early_stopping=1, no_repeat_ngram_size=3, min_p=0.05, beam_width_array=[1, 2],
        ),
        output_config=t.OutputConfig(
            logprobs=0, prompt_logprobs=2, return_context_logits=True, return_generation_logits=True,
            exclude_input_from_output=True, return_encoder_output=True, return_perf_metrics=True,
        ),
        max_tokens=128,
        streaming=True,
        guided_decoding=t.GuidedDecodingParams(
            guide_type=t.GuidedDecodingParams.GUIDE_TYPE_JSON_SCHEMA, guide='{"type":"object"}'
        ),
        embedding_bias=[0.5, -1.0],
        lora_config=t.LoraConfig(task_id=-9, weights=b"\x00\x01", config_json="{}"),
        prompt_tuning_config=t.PromptTuningConfig(embedding_table=b"tbl"),
        multimodal_input=t.MultimodalInput(image_data=[b"img1", b""]),
        kv_cache_retention=t.KvCacheRetentionConfig(policy="lru", config_json="{}"),
        disaggregated_params=t.DisaggregatedParams(
            request_type=t.DisaggregatedParams.REQUEST_TYPE_GENERATION_ONLY,
            ctx_request_id="ctx",
            context_phase_params=t.ContextPhaseParams(first_gen_token_id=11, kv_cache_blocks=b"kv"),
        ),
        lookahead_config=t.LookaheadConfig(max_window_size=4, max_ngram_size=3, max_verification_set_size=2),
        cache_salt_id=-1,
        arrival_time=1.7e9,
        stop=["</s>", "\n\n"],
        stop_token_ids=[2, 32000],
        ignore_eos=True,
        bad=["bad"],
        bad_token_ids=[13],
        include_stop_token_in_output=True,
    )
    logprob = t.TokenLogprob(token_id=9, logprob=-0.25, top_logprobs=[t.TopLogprob(token_id=9, logprob=-0.25)])
    chunk = t.GenerateResponse(
        request_id="req-7",
        chunk=t.GenerateStreamChunk(
            token_ids=[9, 1000], sequence_index=1, prompt_tokens=3, completion_tokens=2, cached_tokens=1,
            logprobs=[logprob],
        ),
    )
    complete_fields = dict(
        output_token_ids=[9, 1000, 2], sequence_index=1, prompt_tokens=3, completion_tokens=3,
        cached_tokens=1, logprobs=[logprob], prompt_logprobs=[logprob],
        perf_metrics=t.PerfMetrics(
            arrival_time=1.5, first_scheduled_time=1.6, first_token_time=1.7, last_token_time=1.9,
            kv_cache_transfer_start=1.55, kv_cache_transfer_end=1.58, kv_cache_size=4096,
        ),
        context_logits=b"\x00\x00\x80\x3f", generation_logits=b"", spec_accepted_tokens=5, spec_draft_tokens=8,
    )
    complete_by_string = t.GenerateResponse(
        request_id="req-7",
        complete=t.GenerateComplete(finish_reason="stop", matched_stop_str="\n\n", **complete_fields),
    )
    complete_by_token = t.GenerateResponse(
        request_id="req-7",
        complete=t.GenerateComplete(finish_reason="stop", matched_token_id=2, **complete_fields),
    )
    complete_by_length = t.GenerateResponse(
        request_id="req-8", complete=t.GenerateComplete(finish_reason="length", output_token_ids=[4])
    )
    batch = c.KvEventBatch(
        sequence_number=12,
        timestamp=1.7e9,
        dp_rank=0,
        events=[
            c.KvCacheEvent(
                event_id=1,
                stored=c.KvBlocksStored(
                    blocks=[
                        c.KvBlock(
                            block_hash=-123456789, token_ids=[1, 2, 3], block_size=32, lora_id=7, cache_level=0,
                            extra_keys=[
                                c.KvBlockExtraKey(text="t"),
                                c.KvBlockExtraKey(blob=b"b"),
                                c.KvBlockExtraKey(number=-4),
                                c.KvBlockExtraKey(multimodal=c.KvMultimodalKey(identifier="img", offset=10)),
                            ],
                        )
                    ],
                    parent_block_hash=-1, tier=c.KV_CACHE_TIER_HOST, medium="cpu", group_idx=0,
                    kv_cache_spec_kind="full", kv_cache_spec_sliding_window=4096,
                    locality=c.KV_CACHE_LOCALITY_REMOTE, ownership="w0", session_id="s", lora_name="l",
                    cache_salt="salt",
                ),
            ),
            c.KvCacheEvent(
                event_id=2,
                removed=c.KvBlocksRemoved(
                    block_hashes=[-123456789, 5], cache_level=1, tier=c.KV_CACHE_TIER_DEVICE, medium="hbm",
                    group_idx=1, locality=c.KV_CACHE_LOCALITY_LOCAL, ownership="w0",
                ),
            ),
            c.KvCacheEvent(event_id=3, cleared=c.KvCacheCleared(ownership="")),
        ],
        snapshot=c.KvSnapshotChunk(index=1, count=2, blocks=300, unknown_before=4),
        load=c.EngineLoad(
            running_requests=3, waiting_requests=1, waiting_uncached_tokens=0, token_usage=0.42,
            gen_throughput=812.5, max_running_requests=64, age_ms=5, sample=99, load_only=False,
            cache_hit_rate=0.3, num_used_tokens=100, max_total_num_tokens=8192,
            memory=c.EngineMemory(weight_gb=14.0, kv_cache_gb=20.5, graph_gb=1.0, token_capacity=8192),
            queues=c.EngineQueues(waiting=1, grammar=0, paused=2, retracted=3),
            speculative=c.EngineSpeculative(accept_length=2.5, accept_rate=0.6),
            lora=c.EngineLora(slots_used=1, slots_total=4, utilization=0.25),
            disaggregation=c.EngineDisaggregation(
                mode="decode", prefill_prealloc_queue_reqs=1, prefill_inflight_queue_reqs=2,
                decode_prealloc_queue_reqs=3, decode_transfer_queue_reqs=4, decode_retracted_queue_reqs=5,
                kv_transfer_speed_gb_s=12.5, kv_transfer_latency_ms=3.25,
            ),
            active_token_usage=0.4, engine_silence_ms=0, engine_reports_steps=True, prefill_pending_tokens=17,
        ),
    )
    heartbeat = c.KvEventBatch(sequence_number=13, load=c.EngineLoad(load_only=True, sample=100))
    tokenizer_chunk = c.GetTokenizerChunk(data=b"PK\x03\x04", sha256="ab" * 32)
    return {
        "GenerateRequest": request,
        "GenerateResponse(chunk)": chunk,
        "GenerateResponse(complete, matched_stop_str)": complete_by_string,
        "GenerateResponse(complete, matched_token_id)": complete_by_token,
        "GenerateResponse(complete, length)": complete_by_length,
        "KvEventBatch(events+load)": batch,
        "KvEventBatch(heartbeat)": heartbeat,
        "GetTokenizerChunk": tokenizer_chunk,
    }


def our_pool(our_files):
    pool = descriptor_pool.DescriptorPool()
    pending = list(our_files)
    added = set()
    while pending:  # add files after their imports
        progress = False
        for f in list(pending):
            if all(dep in added for dep in f.dependency):
                pool.AddSerializedFile(f.SerializeToString())
                added.add(f.name)
                pending.remove(f)
                progress = True
        if not progress:
            raise ValueError(f"unresolvable imports in {[f.name for f in pending]}")
    return pool


def unknown_field_paths(msg, path=""):
    """Paths of (sub)messages that kept fields their descriptor does not know."""
    found = [path or "<root>"] if len(UnknownFieldSet(msg)) else []
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if is_repeated(field):
            for i, item in enumerate(value):
                found += unknown_field_paths(item, f"{path}.{field.name}[{i}]")
        else:
            found += unknown_field_paths(value, f"{path}.{field.name}")
    return found


def is_repeated(field):
    """Whether a runtime field descriptor is repeated (newer protobuf drops `label`)."""
    if hasattr(field, "is_repeated"):
        return field.is_repeated
    return field.label == field.LABEL_REPEATED


def as_dict(msg):
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def extensions_ignored_upstream(report, pool):
    """Our messages with the extension fields set must read in upstream's classes as the same
    message without them: known fields intact, the extension kept only as an unknown field."""
    response_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("trtllm.GenerateResponse"))
    ours = response_cls()
    ours.request_id = "ctx-1"
    ours.complete.output_token_ids.extend([1234])
    ours.complete.finish_reason = "length"
    ours.complete.prompt_tokens = 16
    ours.complete.completion_tokens = 1
    ours.complete.kv_handoff = b"TKVH\x01 handoff bytes"
    up = up_trtllm.GenerateResponse.FromString(ours.SerializeToString())
    expected = up_trtllm.GenerateResponse(request_id="ctx-1")
    expected.complete.output_token_ids.extend([1234])
    expected.complete.finish_reason = "length"
    expected.complete.prompt_tokens = 16
    expected.complete.completion_tokens = 1
    if as_dict(up) != as_dict(expected):
        report.error("extension kv_handoff", f"upstream read {as_dict(up)}, expected {as_dict(expected)}")
    unknown = [(f.field_number) for f in UnknownFieldSet(up.complete)]
    if unknown != [1000]:
        report.error("extension kv_handoff", f"upstream kept unknown fields {unknown}, expected [1000]")

    info_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("trtllm.GetServerInfoResponse"))
    info = info_cls(version="v", backend="tensorrt", tensor_parallel_size=1)
    info.disaggregation.mode = "prefill"
    info.disaggregation.kv_transfer_speed_gb_s = 12.5
    up_info = up_trtllm.GetServerInfoResponse.FromString(info.SerializeToString())
    if (up_info.version, up_info.backend, up_info.tensor_parallel_size) != ("v", "tensorrt", 1):
        report.error("extension disaggregation", f"upstream read {as_dict(up_info)}")
    if [f.field_number for f in UnknownFieldSet(up_info)] != [1000]:
        report.error("extension disaggregation", "upstream did not keep it as one unknown field")
    return 2


def round_trip(report, pool, label, up_msg):
    full_name = up_msg.DESCRIPTOR.full_name
    ours_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))
    up_bytes = up_msg.SerializeToString(deterministic=True)

    # upstream bytes -> ours -> bytes
    ours = ours_cls.FromString(up_bytes)
    for path in unknown_field_paths(ours):
        report.error(f"round trip {label}", f"ours kept unknown fields at {path}")
    if as_dict(ours) != as_dict(up_msg):
        report.error(f"round trip {label}", f"decoded differently:\n  upstream {as_dict(up_msg)}\n  ours     {as_dict(ours)}")
    if ours.SerializeToString(deterministic=True) != up_bytes:
        report.error(f"round trip {label}", "ours re-encoded upstream's message to different bytes")

    # ours built from scratch -> bytes -> upstream
    built = json_format.ParseDict(as_dict(up_msg), ours_cls())
    built_bytes = built.SerializeToString(deterministic=True)
    back = type(up_msg).FromString(built_bytes)
    for path in unknown_field_paths(back):
        report.error(f"round trip {label}", f"upstream kept unknown fields of ours at {path}")
    if back != up_msg:
        report.error(f"round trip {label}", "upstream decoded our encoding to a different message")
    if built_bytes != up_bytes:
        report.error(f"round trip {label}", "our encoding differs from upstream's bytes")
    return len(up_bytes)


# ---------------------------------------------------------------------------------------
# Self-test: the checker must notice broken descriptors
# ---------------------------------------------------------------------------------------


def find_message(files, full_name):
    package, _, name = full_name.rpartition(".")
    for f in files:
        if f.package == package:
            for msg in f.message_type:
                if msg.name == name:
                    return msg
    raise KeyError(full_name)


def find_field(files, full_name, field_name):
    return next(f for f in find_message(files, full_name).field if f.name == field_name)


def mutations():
    """(description, edit) pairs; each edit breaks compatibility in one way."""

    def renumber(files):
        find_field(files, "trtllm.GenerateComplete", "matched_token_id").number = 16

    def retype(files):
        find_field(files, "smg.grpc.common.EngineLoad", "token_usage").type = FDP.TYPE_FLOAT

    def drop_optional(files):
        find_field(files, "smg.grpc.common.KvEventBatch", "dp_rank").proto3_optional = False

    def unreserve(files):
        del find_message(files, "trtllm.GenerateRequest").reserved_range[:]

    def enum_value(files):
        common = next(f for f in files if f.package == "smg.grpc.common")
        next(e for e in common.enum_type if e.name == "KvCacheTier").value[1].number = 7

    def unary_generate(files):
        trtllm = next(f for f in files if f.package == "trtllm")
        next(m for m in trtllm.service[0].method if m.name == "Generate").server_streaming = False

    return [
        ("GenerateComplete.matched_token_id renumbered", renumber),
        ("EngineLoad.token_usage as float", retype),
        ("KvEventBatch.dp_rank not optional", drop_optional),
        ("GenerateRequest reserved numbers dropped", unreserve),
        ("KV_CACHE_TIER_DEVICE renumbered", enum_value),
        ("Generate made unary", unary_generate),
    ]


def self_test(our_files):
    """Returns the descriptions of mutations the checker failed to notice."""
    missed = []
    for description, edit in mutations():
        files = [descriptor_pb2.FileDescriptorProto.FromString(f.SerializeToString()) for f in our_files]
        edit(files)
        report = Report()
        compare_descriptors(report, [file_proto(up_common), file_proto(up_trtllm)], files)
        if not report.errors:
            missed.append(description)
    # A renumbered field must also show up in the byte round trip, not only in descriptors.
    files = [descriptor_pb2.FileDescriptorProto.FromString(f.SerializeToString()) for f in our_files]
    mutations()[0][1](files)
    report = Report()
    for label, msg in sample_messages().items():
        round_trip(report, our_pool(files), label, msg)
    if not report.errors:
        missed.append("round trip with a renumbered field")
    return missed


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    fds = descriptor_pb2.FileDescriptorSet()
    with open(argv[1], "rb") as f:
        fds.ParseFromString(f.read())
    our_files = list(fds.file)
    up_files = [file_proto(up_common), file_proto(up_trtllm)]

    missed = self_test(our_files)
    if missed:
        print(f"proto_compat: the checker did not notice these breakages: {missed}")
        return 1

    report = Report()
    checked = compare_descriptors(report, up_files, our_files)
    pool = our_pool(our_files)
    trips = []
    for label, msg in sample_messages().items():
        size = round_trip(report, pool, label, msg)
        trips.append(f"{label} ({size} bytes)")
    extensions = extensions_ignored_upstream(report, pool)

    for note in report.notes:
        print(f"note: {note}")
    if report.errors:
        print(f"proto_compat: {len(report.errors)} mismatch(es) with the upstream stubs:")
        for err in report.errors:
            print(f"  MISMATCH {err}")
        return 1
    print(f"proto_compat: {checked} messages/enums and the service match upstream")
    print(f"proto_compat: round trips ok: {', '.join(trips)}")
    print(f"proto_compat: upstream reads our {extensions} extension fields as unknown and the rest unchanged")
    print(f"proto_compat: self-test ok: all {len(mutations()) + 1} deliberate breakages were detected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
