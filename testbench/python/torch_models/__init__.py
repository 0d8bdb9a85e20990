"""A corpus of plain-PyTorch LLM blocks written the way their source codebases write them (not
adapted to any tracer), for trying the PyTorch lowering on code as practitioners have it.

STYLES maps a style name to its module; each has make(**dims) -> (module in eval mode, prefill
inputs tuple), and, where the style keeps a KV cache, decode_steps(module, lengths) ->
[prefill inputs, decode inputs] and ragged_reference(module, lengths). MoE styles have
router_of(module) -> (router Linear, k). constructs.CONSTRUCTS has one tiny module per construct;
reference has the fp32 / bf16 runners, the error metrics, the tolerance and the routing-aware
MoE comparison; measure_bf16.py measures the errors behind the tolerance, try_lower.py tries
stepsim.torch.lower on every style and construct."""
# constructs and reference are no styles: imported for the tests (tm.constructs, tm.reference).
from . import (constructs, gpt2, llama_complex, llama_interleaved, mixtral_einsum,  # noqa: F401
               mixtral_index_add, mixtral_where, qwen3_moe, reference, sdpa_torch2)

STYLES = {
    "gpt2": gpt2,
    "llama_complex": llama_complex,
    "llama_interleaved": llama_interleaved,
    "mixtral_einsum": mixtral_einsum,
    "mixtral_where": mixtral_where,
    "mixtral_index_add": mixtral_index_add,
    "qwen3_moe": qwen3_moe,
    "sdpa_torch2": sdpa_torch2,
}

# styles with a KV cache (decode_steps, ragged_reference) and with a router (router_of)
CACHED = [name for name, m in STYLES.items() if hasattr(m, "decode_steps")]
MOE = [name for name, m in STYLES.items() if hasattr(m, "router_of")]
