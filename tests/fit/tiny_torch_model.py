"""A tiny PyTorch model for the tests of vkblr-fit's Python tools and the
guide's worked example: the same weights and inputs on every run.

    make()           two residual MLP blocks (Linear 64 -> 96, GELU, Linear 96 -> 64)
                     and a head Linear 64 -> 40, which vkblr-fit cannot fit (40 is
                     not a multiple of 16)
    make_inputs()    4 batches of 2 sequences of 96 tokens, [2][96][64] each

Each weight is a product of two Gaussian factors with decaying columns plus
a little noise (a spectrum like a trained layer's), from a fixed seed.
"""
import torch


class Block(torch.nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.up = torch.nn.Linear(width, hidden)
        self.down = torch.nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(64, 96) for _ in range(2)])
        self.head = torch.nn.Linear(64, 40)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def make() -> Tiny:
    model = Tiny()
    gen = torch.Generator().manual_seed(20)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".weight"):
                out, inp = p.shape
                decay = torch.exp(-torch.arange(16.0) / 4)
                a = torch.randn(out, 16, generator=gen) * decay
                b = torch.randn(16, inp, generator=gen)
                p.copy_((a @ b + 0.1 * torch.randn(out, inp, generator=gen)) / inp ** 0.5)
            else:
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
    return model.eval()


def make_inputs() -> list:
    gen = torch.Generator().manual_seed(21)
    return [torch.randn(2, 96, 64, generator=gen) for _ in range(4)]
