"""Write a tiny random-weight Llama that vLLM's CPU engine can serve, with no hub.

The weights are random, so the text is noise, but every step of serving is real:
tokenisation, the chat template, scheduling, prefill, batched decode, the KV cache.
Shapes: hidden 256 and 4 attention heads give head_dim 64 (vLLM's CPU attention refuses
head_dim 16 at the first request: "Unsupported CPU attention configuration"); 2 KV heads
(grouped-query attention, as real Llamas); 2 layers. The tokenizer is a word-level
``tokenizers`` vocabulary of ``--vocab`` entries: special tokens, then made-up words, so
any English prompt tokenises (unknown words become ``<unk>``) and every id decodes to a
word. The chat template is one line: each message as ``role: content``.
"""

from __future__ import annotations

import argparse
import itertools
import string
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIAL = ["<unk>", "<s>", "</s>", "<pad>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ message['role'] }}: "
    "{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def words(count: int) -> list[str]:
    """``count`` distinct lowercase words: the letters, then two- and three-letter ones."""
    letters = string.ascii_lowercase
    made = itertools.chain(
        letters,
        ("".join(pair) for pair in itertools.product(letters, repeat=2)),
        ("".join(triple) for triple in itertools.product(letters, repeat=3)),
    )
    return list(itertools.islice(made, count))


def write_tokenizer(out: Path, vocab_size: int, context: int) -> PreTrainedTokenizerFast:
    entries = [*SPECIAL, "assistant", "user", "system", ":", ".", ",", "?", "!"]
    entries += words(vocab_size - len(entries))
    vocab = {token: index for index, token in enumerate(entries)}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()  # words and punctuation apart
    tokenizer.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=context,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True, help="the model folder to write")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=2048)
    parser.add_argument("--context", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = write_tokenizer(out, args.vocab, args.context)
    config = LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 4,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        max_position_embeddings=args.context,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    torch.manual_seed(args.seed)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    head_dim = args.hidden // args.heads
    print(
        f"wrote {out}: vocab {args.vocab}, hidden {args.hidden}, head_dim {head_dim}, "
        f"{args.layers} layers"
    )


if __name__ == "__main__":
    main()
