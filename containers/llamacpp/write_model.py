"""Write a tiny random-weight llama GGUF that llama.cpp's llama-server can serve.

The weights are random, so the text is noise, but every step of serving is real:
tokenisation with a real vocabulary, prefill, batched decode, slots and queueing. The
vocabulary (``tokenizer.*`` fields) is copied from a vocab-only GGUF that llama.cpp
ships in ``models/``. Shapes follow the llama architecture; numpy shapes are ggml's
reversed, so a ggml ``[n_embd, n_vocab]`` tensor is a numpy ``(n_vocab, n_embd)``.
"""

from __future__ import annotations

import argparse

import gguf
import numpy as np


def copy_tokenizer(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> int:
    """Copy every ``tokenizer.*`` field; return the vocabulary size."""
    vocab_size = 0
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value = field.contents()
        if len(field.types) > 1:  # an array: its element type is the second entry
            writer.add_key_value(name, value, field.types[0], sub_type=field.types[1])
        else:
            writer.add_key_value(name, value, field.types[0])
        if name == "tokenizer.ggml.tokens":
            vocab_size = len(value)
    if not vocab_size:
        raise SystemExit("the vocab file has no tokenizer.ggml.tokens")
    return vocab_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vocab", required=True, help="a vocab-only llama GGUF")
    parser.add_argument("--out", required=True)
    parser.add_argument("--embedding", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    n_embd, n_head, n_ff = args.embedding, args.heads, args.embedding * 4
    rng = np.random.default_rng(args.seed)
    reader = gguf.GGUFReader(args.vocab)
    writer = gguf.GGUFWriter(args.out, "llama")
    writer.add_name("pytest-latency tiny random llama")
    writer.add_context_length(args.context)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(args.layers)
    writer.add_feed_forward_length(n_ff)
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_head)
    writer.add_rope_dimension_count(n_embd // n_head)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    n_vocab = copy_tokenizer(reader, writer)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", weights(n_vocab, n_embd))
    writer.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    writer.add_tensor("output.weight", weights(n_vocab, n_embd))
    for block in range(args.layers):
        prefix = f"blk.{block}"
        writer.add_tensor(f"{prefix}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{prefix}.{name}.weight", weights(n_embd, n_embd))
        writer.add_tensor(f"{prefix}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        writer.add_tensor(f"{prefix}.ffn_gate.weight", weights(n_ff, n_embd))
        writer.add_tensor(f"{prefix}.ffn_up.weight", weights(n_ff, n_embd))
        writer.add_tensor(f"{prefix}.ffn_down.weight", weights(n_embd, n_ff))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {args.out}: vocab {n_vocab}, embedding {n_embd}, {args.layers} layers")


if __name__ == "__main__":
    main()
