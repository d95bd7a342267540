"""What the engine does to be fast on a CPU changes no answer it should not: grouped attention is
bit-identical to transformers' own, prefill groups only cut padding, and int8 weights stay within
their rounding of the float layer (and a real judge still answers through them)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from localeval.cli import main
from localeval.device import dtype_name, native_bf16
from localeval.engine import attention
from localeval.engine.attention import grouped_sdpa
from localeval.engine.decode import PREFILL_PADDING, Prompt, _similar_lengths
from localeval.engine.int8 import NARROW_PASS, Int8Linear, quantize_linears
from localeval.engine.judge import TransformersJudge
from localeval.engine.linears import PackedLinear, pack_linears, packable, replace_linears
from localeval.errors import UserError
from localeval.requests import JudgeRequest


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("tokens", [1, 4])
def test_grouped_attention_gives_transformers_sdpa_numbers_bit_for_bit(dtype, tokens):
    torch.manual_seed(0)
    rows, heads, kv_heads, cached, dim = 3, 6, 2, 40, 16
    module = SimpleNamespace(num_key_value_groups=heads // kv_heads, is_causal=True, training=False)
    query = torch.randn(rows, heads, tokens, dim).to(dtype)
    key, value = (torch.randn(rows, kv_heads, cached, dim).to(dtype) for _ in range(2))
    mask = torch.ones(rows, 1, tokens, cached, dtype=torch.bool).tril(cached - tokens)
    mask[1, :, :, :7] = False  # a left-padded row
    ours, _ = grouped_sdpa(module, query, key, value, mask, scaling=dim ** -0.5)
    theirs, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=dim ** -0.5)
    assert torch.equal(ours, theirs)


def test_prefill_groups_are_cut_where_padding_would_pass_a_quarter_of_the_real_tokens():
    prompts = [Prompt((), tuple(range(n))) for n in (10, 11, 12, 30, 31, 100)]
    groups = _similar_lengths(prompts)
    assert [[len(p.suffix) for p in group] for group in groups] == [[10, 11, 12], [30, 31], [100]]
    for group in groups:
        real = sum(len(p.suffix) for p in group)
        assert len(group) * max(len(p.suffix) for p in group) <= (1 + PREFILL_PADDING) * real
    assert [p for group in groups for p in group] == prompts  # same rows, same order


@pytest.mark.parametrize("tokens", [1, NARROW_PASS, NARROW_PASS + 1, 64])  # the int8 kernel and the dequantized product
def test_int8_linear_stays_within_its_rounding_of_the_float_layer(tokens):
    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 48).to(torch.bfloat16)
    x = torch.randn(2, tokens, 64).to(torch.bfloat16)
    quantized = Int8Linear(layer)
    assert quantized.weight_int8.dtype == torch.int8 and quantized.weight_int8.abs().max() == 127
    expected = layer(x).float()
    got = quantized(x).float()
    assert got.shape == expected.shape
    # one int8 step per weight (scale/2 at most) over 64 inputs, and bfloat16's own rounding
    assert (got - expected).abs().max() < 0.05 * expected.abs().max()


def test_quantize_linears_replaces_every_linear_layer_head_included():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 4)))
    assert quantize_linears(model.to(torch.bfloat16)) == 2
    assert not any(isinstance(m, torch.nn.Linear) for m in model.modules())
    assert model(torch.randn(3, 8).to(torch.bfloat16)).shape == (3, 4)


CPU = torch.device("cpu")
needs_packing = pytest.mark.skipif(not packable(CPU, torch.float32), reason="this torch cannot prepack for oneDNN")


def judge_layer(in_features: int, out_features: int, dtype: torch.dtype) -> torch.nn.Linear:
    torch.manual_seed(0)
    return torch.nn.Linear(in_features, out_features).to(dtype)


@needs_packing
@pytest.mark.parametrize("shape", [(576, 1536), (4864, 896), (576, 49152)])  # SmolLM2's and Qwen-0.5B's layers
def test_a_packed_rows_result_does_not_depend_on_the_rows_beside_it(shape):
    """What keeps float32 scores batch-independent: one row alone, a few, or many, the same numbers."""
    dtype = torch.float32
    linear = judge_layer(*shape, dtype)
    packed = PackedLinear(linear)
    x = torch.randn(3, 100, shape[0]).to(dtype)  # batch x tokens, as a model feeds it
    together = packed(x)
    assert together.shape == (3, 100, shape[1])
    assert torch.equal(packed(x[1, 7]), together[1, 7])  # one row alone (oneDNN's single-row kernel avoided)
    assert torch.equal(packed(x[:, :1]), together[:, :1])  # a decoding pass: one token per row
    assert torch.equal(packed(x[2:, 40:47]), together[2:, 40:47])
    assert (packed(x) - linear(x)).abs().max() <= 1e-4 * linear(x).abs().max()


def test_packing_is_for_a_cpus_float32_and_its_native_bfloat16():
    assert not packable(torch.device("cuda"), torch.float32)
    assert not packable(CPU, torch.float16)
    assert not packable(CPU, torch.bfloat16) or native_bf16()  # emulated bfloat16 is not a default: not packed
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Sequential(torch.nn.Linear(8, 4)))
    if packable(CPU, torch.float32):
        assert pack_linears(model) == 2 and not any(isinstance(m, torch.nn.Linear) for m in model.modules())
        assert model(torch.randn(3, 8)).shape == (3, 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_packing_lets_go_of_the_model_file(tmp_path, dtype):
    """Weights loaded in the file's own format are views of its memory map, which stays mapped, every
    page packing read included, while any one of them lives (3 GB more for Qwen-1.5B in bfloat16):
    after packing, no tensor of the model is one of those views."""
    if not packable(CPU, dtype):
        pytest.skip(f"{dtype} is not prepacked on this CPU")
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True,
                         attention_bias=True)  # biases, as Qwen has
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).to(dtype).save_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=dtype).eval()
    ids = torch.tensor([[1, 5, 9, 3]])
    expected = model(ids).logits
    from_file = {t.untyped_storage().data_ptr() for t in model.parameters()}
    pack_linears(model)
    # (a packed weight is oneDNN's own tensor, made by packing: not a view of anything)
    kept = {t.untyped_storage().data_ptr() for t in (*model.parameters(), *model.buffers()) if not t.is_mkldnn}
    assert kept and not kept & from_file
    got = model(ids).logits
    assert (got.float() - expected.float()).abs().max() <= 0.02 * expected.float().abs().max()


def test_a_float32_judge_reads_a_bfloat16_file_narrow_and_widens_it_to_the_same_numbers(tmp_path, tiny_judge):
    """The embedded judges' files hold bfloat16: read as they are and widened by torch, the model is
    the one transformers' own float32 load gives, bit for bit (and loads 2.6x faster for Qwen-0.5B)."""
    import shutil

    from transformers import AutoModelForCausalLM

    from localeval.engine import attention

    AutoModelForCausalLM.from_pretrained(tiny_judge).to(torch.bfloat16).save_pretrained(tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(tiny_judge / name, tmp_path / name)
    judge = TransformersJudge(str(tmp_path), "tiny", "cpu", torch.float32)
    assert judge._reading_dtype() == torch.bfloat16
    judge.load()
    assert {p.dtype for p in judge.model.parameters()} == {torch.float32}
    direct = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32,
                                                  attn_implementation=attention.register()).eval()
    if judge.prepacked:
        pack_linears(direct)
    ids = torch.tensor([[1, 5, 9, 3, 7]])
    with torch.inference_mode():
        assert torch.equal(judge.model(input_ids=ids).logits, direct(input_ids=ids).logits)
    assert TransformersJudge(str(tmp_path), "tiny", "cpu", torch.bfloat16)._reading_dtype() == torch.bfloat16
    assert TransformersJudge(str(tiny_judge), "tiny", "cpu", torch.bfloat16)._reading_dtype() == torch.bfloat16


def test_a_judges_identity_says_how_its_weights_are_held():
    """The answer cache keys on it: prepacked float32 differs from torch's kernel in the last bits."""
    def identity(dtype, **kwargs) -> str:
        return TransformersJudge("/models/judge", "judge", "cpu", dtype, "f1", **kwargs).identity

    packed = "+prepacked" if packable(CPU, torch.float32) else ""
    assert identity(torch.float32) == f"judge|f1|torch.float32{packed}|greedy"
    assert identity(torch.float32, prepack=False) == "judge|f1|torch.float32|greedy"
    packed = "+prepacked" if packable(CPU, torch.bfloat16) else ""  # where the CPU has bf16 instructions
    assert identity(torch.bfloat16) == f"judge|f1|torch.bfloat16{packed}|greedy"
    assert identity(torch.bfloat16, prepack=False) == "judge|f1|torch.bfloat16|greedy"
    assert identity(torch.bfloat16, int8_weights=True) == "judge|f1|torch.bfloat16+int8-weights|greedy"
    assert "+prepacked" not in TransformersJudge("/m", "judge", "cuda", torch.bfloat16).identity
    # cuDNN's attention, measured against, is another kernel: the cache must not mix their answers
    assert TransformersJudge("/m", "judge", "cuda", torch.bfloat16, "f1", torch_attention=True).identity == (
        "judge|f1|torch.bfloat16+torch-attention|greedy")
    assert identity(torch.float32, torch_attention=True) == identity(torch.float32)  # a CUDA choice: no change on CPU


def test_attention_on_cuda_runs_without_cudnns_per_shape_plans():
    """cuDNN plans every new shape (~40 ms of host time on an H200) and a judge's shapes change every pass;
    the flag torch chooses by is process-wide, so it is held for the block and given back after it.
    The other kernels stay as the process has them."""
    cuda = torch.device("cuda")
    before = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_mem_efficient_sdp(False)  # a choice of the user's own, left alone
    try:
        with attention.kernels(cuda):
            assert not torch.backends.cuda.cudnn_sdp_enabled()
            assert not torch.backends.cuda.mem_efficient_sdp_enabled() and torch.backends.cuda.flash_sdp_enabled()
        assert torch.backends.cuda.cudnn_sdp_enabled() == before
    finally:
        torch.backends.cuda.enable_mem_efficient_sdp(True)
    for device, torch_choice in ((torch.device("cpu"), False), (cuda, True)):  # torch's own choice
        with attention.kernels(device, torch_choice):
            assert torch.backends.cuda.cudnn_sdp_enabled() == before


def test_cudnn_stays_off_while_any_thread_needs_it_off_and_comes_back_after_the_last():
    """Blocks in two threads overlap rather than nest: the first to end must not turn cuDNN back on
    under the other, nor the last leave it off for the rest of the process."""
    import threading

    cuda = torch.device("cuda")
    torch.backends.cuda.enable_cudnn_sdp(True)
    second_in, first_out, seen = threading.Event(), threading.Event(), []

    def second():  # starts inside the first block and ends after it
        with attention.kernels(cuda):
            second_in.set()
            first_out.wait(10)
            seen.append(torch.backends.cuda.cudnn_sdp_enabled())

    thread = threading.Thread(target=second)
    with attention.kernels(cuda):
        thread.start()
        second_in.wait(10)
    first_out.set()
    thread.join()
    assert seen == [False] and torch.backends.cuda.cudnn_sdp_enabled()


def test_a_judge_generates_under_its_attention_kernels(tiny_judge, monkeypatch):
    entered = []
    real = attention.kernels
    monkeypatch.setattr(attention, "kernels", lambda device, torch_choice=False: entered.append((device, torch_choice)) or real(device, torch_choice))
    judge = TransformersJudge(str(tiny_judge), "tiny", "cpu", torch.float32)
    request = JudgeRequest.build("Answer.", "Is it?", {"type": "object", "properties": {"v": {"enum": [0, 1]}},
                                                      "required": ["v"], "additionalProperties": False}, 16)
    [answer] = judge.generate([request])
    assert answer.data in ({"v": 0}, {"v": 1}) and entered == [(torch.device("cpu"), False)]


def test_int8_is_a_cpu_format():
    assert dtype_name("cpu", "int8") == "int8"
    with pytest.raises(UserError, match="int8 is for CPUs"):
        dtype_name("cuda", "int8")


def test_a_real_judge_scores_through_int8_weights(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({
        "user_input": "Where is the Eiffel Tower?", "retrieved_contexts": ["The Eiffel Tower is in Paris."],
        "response": "It is in Paris.", "reference": "The tower stands in Paris."}) + "\n")
    assert main(["run", str(data), "--out", str(tmp_path / "out"), "--dtype", "int8", "--no-cache", "--quiet"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "int8" in summary["models"]["judge"]
    assert all(entry["null"] == 0 for entry in summary["metrics"].values())


def test_a_judge_measured_faster_with_fewer_rows_on_a_cpu_gets_them_unless_a_batch_size_is_given():
    """SmolLM2 was 1.13-1.34x faster at 16 rows than at 32 on a CPU, with a third less memory; Qwen-1.5B
    1.11x slower (docs/benchmarks.md, "Batch size on a CPU")."""
    from localeval import models
    from localeval.engine.limits import DEFAULT_BATCH_SIZE, BatchLimits

    assert models.batch_size("smollm2-135m-instruct", "cpu") == models.batch_size(None, "cpu") == 16
    assert models.batch_size("smollm2-135m-instruct", "cuda:0") == DEFAULT_BATCH_SIZE == 32  # a GPU's rows cost little
    assert models.batch_size("qwen2.5-coder-1.5b-instruct", "cpu") == models.batch_size("/my/judge", "cpu") == 32
    assert BatchLimits().with_batch_size(16).batch_size == 16
    assert BatchLimits(batch_size=32).with_batch_size(16).batch_size == 32  # given: kept


def test_a_pipeline_given_no_batch_size_decodes_the_judges_own_and_an_engine_needs_one():
    """build_pipeline is where the rows come from (models.batch_size): the engine keeps no default of its own, which
    only tests reached (a review)."""
    from localeval.engine.limits import BatchLimits
    from localeval.engine.scheduler import JudgeEngine
    from localeval.engine.scripted import ScriptedJudge
    from localeval.metrics import resolve_metrics
    from localeval.pipeline import build_pipeline

    pipeline = build_pipeline(resolve_metrics(["context_recall"]), ScriptedJudge(lambda request: {}), device="cpu")
    assert pipeline.engine.limits.batch_size == 32  # a judge with no size of its own
    with pytest.raises(ValueError, match="JudgeEngine needs limits with a batch size"):
        JudgeEngine(ScriptedJudge(lambda request: {}), BatchLimits())


@pytest.mark.parametrize("native, expected", [(True, "bfloat16"), (False, "float32")])
def test_a_judge_measured_in_bfloat16_runs_in_it_only_where_the_cpu_computes_it(monkeypatch, native, expected):
    from localeval import device, models

    monkeypatch.setattr(device, "native_bf16", lambda: native)
    assert models.cpu_dtype("qwen2.5-coder-1.5b-instruct") == "bfloat16"  # measured: docs/judges.md
    assert models.cpu_dtype("smollm2-135m-instruct") == "float32"  # bfloat16 cost it agreement
    assert dtype_name("cpu", "auto", models.cpu_dtype("qwen2.5-coder-1.5b-instruct")) == expected
    assert dtype_name("cpu", "auto", models.cpu_dtype("smollm2-135m-instruct")) == "float32"
    assert dtype_name("cpu", "float32", "bfloat16") == "float32"  # asked for, always given
    assert dtype_name("cuda", "auto", "float32") == "bfloat16"


@pytest.mark.parametrize("dtype, warning", [("bfloat16", "this CPU has no bf16 instructions"),
                                             ("int8", "this CPU has no bf16 instructions"),
                                             ("float16", "this CPU has no fp16 instructions"), ("float32", None)])
def test_a_dtype_the_cpu_emulates_is_run_with_a_warning(monkeypatch, capsys, tmp_path, tiny_judge, dtype, warning):
    """bfloat16 or float16 on a CPU without their instructions runs several times slower than float32
    (int8: 5.6x, float16: 3x, docs/benchmarks.md): a user who asks for it should hear so, and still get the run."""
    from localeval import device

    monkeypatch.setattr(device, "cpu_flags", lambda: ("avx2",))
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"user_input": "Where?", "retrieved_contexts": ["In Paris."], "response": "Paris."}) + "\n")
    argv = ["run", str(data), "--judge", str(tiny_judge), "--metrics", "context_relevance", "--dtype", dtype,
            "--out", str(tmp_path / "out"), "--no-cache", "--quiet"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert ("this CPU has no" in err) == (warning is not None)
    assert warning is None or warning in err


@pytest.mark.parametrize(("cluster", "warned"), [
    (dict(address="local", gpus_per_worker=1), False),  # GPU workers: this CPU computes nothing
    (dict(address="head:6379"), False),  # CPU workers on other machines, whose CPUs this one cannot see
    (dict(address="local"), True),  # CPU workers on this machine: its CPU is theirs
])
def test_a_ray_driver_warns_of_emulated_bfloat16_only_when_its_cpu_is_the_workers(monkeypatch, tiny_judge, cluster,
                                                                                  warned):
    """The driver builds a pipeline only to name the run, on "cpu" whatever the workers use."""
    import warnings

    from localeval import device
    from localeval.metrics import resolve_metrics
    from localeval.pipeline import PipelineRecipe, build_scoring
    from localeval.cluster import Cluster

    monkeypatch.setattr(device, "cpu_flags", lambda: ("avx2",))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)  # a local cluster's GPU workers fit on this machine
    recipe = PipelineRecipe(resolve_metrics(["context_recall"]), str(tiny_judge), dtype="bfloat16")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_scoring(recipe, Cluster(**cluster), log=lambda message: None)
    assert any("this CPU has no bf16 instructions" in str(w.message) for w in caught) == warned


def test_only_bfloat16_on_a_cpu_known_to_lack_it_counts_as_emulated(monkeypatch):
    from localeval import device

    for flags, emulated in [(("avx2",), True), (("avx2", "avx512_bf16"), False), (("amx_bf16",), False), ((), False)]:
        monkeypatch.setattr(device, "cpu_flags", lambda flags=flags: flags)
        assert device.emulated_on_this_cpu("cpu", torch.bfloat16) == emulated  # int8's activations too
        assert not device.emulated_on_this_cpu("cpu", torch.float32)
        assert not device.emulated_on_this_cpu("cuda", torch.bfloat16)


def test_float16_counts_as_emulated_on_a_cpu_without_fp16_arithmetic(monkeypatch):
    """f16c only converts float16; avx512_fp16 and amx_fp16 compute in it."""
    from localeval import device

    for flags, emulated in [(("avx2",), True), (("avx512_bf16", "avx512f"), True), (("avx512_fp16",), False),
                            (("amx_fp16",), False), ((), False)]:
        monkeypatch.setattr(device, "cpu_flags", lambda flags=flags: flags)
        assert device.emulated_on_this_cpu("cpu", torch.float16) == emulated
        assert not device.emulated_on_this_cpu("cuda", torch.float16)


def test_replacing_linears_frees_each_original_as_it_goes():
    """A load must not hold two copies of every weight: once replaced, a layer is garbage."""
    import gc
    import weakref

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(torch.nn.Linear(8, 4)))
    originals = [weakref.ref(m) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    seen_alive = []

    def make(linear):
        gc.collect()
        seen_alive.append(sum(ref() is not None for ref in originals))
        return torch.nn.Identity()

    assert replace_linears(model, make) == 2
    assert seen_alive == [2, 1]  # when the second is replaced, the first is already gone


def test_the_tokens_a_row_allows_are_read_off_its_bitmask_words():
    from localeval.engine.grammar import _tokens_allowed

    words = torch.zeros((4, 5), dtype=torch.int32)
    words[0, 0] = 0b101  # tokens 0 and 2
    words[0, 4] = -(2**31)  # the sign bit: token 4 * 32 + 31 = 159
    words[1] = -1  # every bit of every word: 160 tokens, more than a few
    words[2, 3] = 1 << 7  # token 103
    assert _tokens_allowed(words, few=8) == [[0, 2, 159], None, [103], []]  # the last allows nothing
    assert _tokens_allowed(words, few=2) == [None, None, [103], []]
    assert _tokens_allowed(words, few=160)[1] == list(range(160))


def test_rows_keep_only_their_allowed_logits_all_at_once():
    from localeval.engine.grammar import _keep_only

    torch.manual_seed(0)
    logits = torch.randn(5, 50)
    for rows, tokens in (([0, 2, 3, 4], [[1, 7], [49], [], [0, 3, 9]]), ([1], [[]])):  # rows that allow nothing
        expected = logits.clone()
        for row, kept in zip(rows, tokens):  # one row at a time, as the masking was
            values = expected[row, kept]
            expected[row] = float("-inf")
            expected[row, kept] = values
        _keep_only(logits, rows, tokens)
        assert torch.equal(logits, expected)  # rows not listed untouched, the others' kept values exact


def test_wide_rows_lose_every_logit_their_bits_leave_out_and_the_output_layers_padding():
    """numpy unpacks the bits on a CPU (the step took 1.6-1.7x as long with torch's shifts): the same tokens, the sign bit's
    included, rows not listed untouched, and ids past the tokenizer's (an output layer padded wider)
    always out."""
    from localeval.engine.grammar import _forbid, _left_out_by_numpy, _left_out_by_torch

    torch.manual_seed(0)
    words = torch.randint(-2**31, 2**31 - 1, (3, 4), dtype=torch.int32)  # 128 tokens, 130 logits
    words[1, 3] = -(2**31)  # in its last word, only the sign bit: token 127
    for rows in ([0, 1, 2], [2, 0], [1, 0, 2]):  # all rows out of order too
        logits = torch.randn(3, 130)
        expected = logits.clone()
        for row, row_words in zip(rows, words[rows].tolist()):  # bit by bit, as the grammar lays them out
            for token in range(130):
                if token >= 128 or not (row_words[token // 32] >> (token % 32)) & 1:
                    expected[row, token] = float("-inf")
        _forbid(logits, rows, words[rows])
        assert torch.equal(logits, expected)
    logits = torch.zeros(3, 130)
    _forbid(logits, [1], words[[1]])
    assert logits[1, 127] == 0 and torch.isinf(logits[1, 96:127]).all() and not logits[[0, 2]].any()
    assert torch.equal(_left_out_by_numpy(words), _left_out_by_torch(words))  # the GPU's way, here on the CPU


def test_choice_probabilities_of_many_rows_are_each_rows_own_softmax_bit_for_bit():
    """Rows are normalised in groups of as many allowed tokens: each must come out as it would alone, so
    that a sample's probabilities do not depend on the rows it shares a pass with."""
    from localeval.engine.decode import choice_probabilities

    torch.manual_seed(1)
    for dtype in (torch.float32, torch.bfloat16):
        masked = (torch.randn(40, 30) * 6).to(dtype)
        few = [None if row % 7 == 0 else sorted(torch.randperm(30)[: 1 + row % 5].tolist()) for row in range(40)]
        found = choice_probabilities(masked, few)
        for row, tokens in enumerate(few):
            if tokens is None or len(tokens) < 2:
                assert found[row] is None
            else:
                alone = torch.softmax(masked[row, tokens].float(), dim=-1).tolist()
                assert found[row] == dict(zip(tokens, alone))
