"""The PyTorch modules that bench_models.py's peers run, with random weights. Imported only by its
workers, in the peers' virtual environment; the classes live here, at the top of a module, so that
the module pickled once (torch.save) loads in every fresh process."""
import torch

F = torch.nn.functional


def module(model):
    """The module of `model` (a name of bench_models.MODELS), random weights, in eval mode."""
    torch.manual_seed(0)
    if model.startswith("resnet"):
        import torchvision  # not at the top: a fresh process imports only what its model needs
        return getattr(torchvision.models, model)().eval()
    if model == "mlp":
        # examples/mlp/mlp.cpp: fc1, relu, fc2, relu, fc3.
        return torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                   torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                   torch.nn.Linear(1024, 10)).eval()
    if model == "bert":
        return Bert().eval()
    return GPT2(decode=model == "gpt2-decode").eval()


class Bert(torch.nn.Module):
    """transformers' BertModel of BertConfig()'s defaults (BERT-base) with its padding mask, as
    examples/bert/bert_base.cpp; its two outputs as a tuple of tensors, which every exporter
    takes."""

    def __init__(self):
        import transformers
        super().__init__()
        self.bert = transformers.BertModel(transformers.BertConfig())

    def forward(self, input_ids, attention_mask):
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


class GPT2(torch.nn.Module):
    """GPT-2 small as Hugging Face's GPT2LMHeadModel computes it and examples/gpt2 does: learned
    positions, pre-norm blocks, causal scaled_dot_product_attention, gelu (tanh), tied output
    embedding. With `decode`, forward takes one token per sequence after the positions cached in
    `past` ([layers, 2, batch, heads, past, head_dim], one tensor where transformers keeps a
    Cache object, which not every exporter takes) and returns the logits and the cache grown by
    one position, as aotc's `decode` entry does."""

    def __init__(self, decode, layers=12, embd=768, heads=12, vocab=50257, positions=1024):
        super().__init__()
        self.decode, self.heads = decode, heads
        self.wte = torch.nn.Embedding(vocab, embd)
        self.wpe = torch.nn.Embedding(positions, embd)
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(torch.nn.ModuleDict({
                "ln_1": torch.nn.LayerNorm(embd), "c_attn": torch.nn.Linear(embd, 3 * embd),
                "c_proj": torch.nn.Linear(embd, embd), "ln_2": torch.nn.LayerNorm(embd),
                "c_fc": torch.nn.Linear(embd, 4 * embd),
                "mlp_proj": torch.nn.Linear(4 * embd, embd)}))
        self.ln_f = torch.nn.LayerNorm(embd)

    def forward(self, input_ids, past=None):
        b, t = input_ids.shape
        start = 0 if past is None else past.shape[4]
        h = self.wte(input_ids) + self.wpe(torch.arange(start, start + t).unsqueeze(0))
        present = []
        for i, blk in enumerate(self.blocks):
            q, k, v = blk["c_attn"](blk["ln_1"](h)).split(h.shape[-1], dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            if past is not None:
                k, v = torch.cat([past[i, 0], k], 2), torch.cat([past[i, 1], v], 2)
                present.append(torch.stack([k, v]))
            # The decode step's one query attends to every cached position: no mask.
            y = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
            h = h + blk["c_proj"](y.transpose(1, 2).reshape(b, t, -1))
            h = h + blk["mlp_proj"](F.gelu(blk["c_fc"](blk["ln_2"](h)), approximate="tanh"))
        logits = self.ln_f(h) @ self.wte.weight.t()
        return (logits, torch.stack(present)) if self.decode else logits
