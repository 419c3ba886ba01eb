"""Everything a federation needs, computed once: frozen text tower, prompt banks and precomputed image features.

Both CLIP encoders are frozen and prompts only touch the text side, so image features are encoded **once**. A
:class:`FederationSetup` holds, per client j, few-shot training features (n_j, e) with labels, its Dirichlet test
split (features and labels), the corrupted copy of that split (covariate shift), and one shared OOD set (features
plus a 0/1 kind flag: 0 = far-OOD textures, 1 = near-OOD held-out shapes), a validation split per client (drawn
from the training pool, disjoint from its shots; used to choose hyper-parameters) and the hand-crafted zero-shot text
features of the negative words (``neg_text``, (K, e); the NegLabel columns a baseline without learned OOD prompts can
be scored with). It is saved as one ``.safetensors`` file (tensors, with the rest as JSON in its metadata; no
pickle, so a setup file a user is given cannot run code) so Flower's ClientApps (possibly in other processes) load
exactly the same data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from focoop.errors import FOCoOpConfigError
from focoop.text import FrozenTextTower, PromptBank


@dataclass
class ClientData:
    """One client's features (all L2-normalised, float32). Shapes: train (n, e), test (m, e), test_c (m', e),
    val (v, e) (empty when the setup has no validation split)."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    test_c_x: torch.Tensor
    test_c_y: torch.Tensor
    val_x: torch.Tensor = field(default_factory=lambda: torch.zeros(0, 0))
    val_y: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    # patch features (rows, N, e) of the same images (FedOTP); None when the image tower gives none
    train_tok: torch.Tensor | None = None
    test_tok: torch.Tensor | None = None
    test_c_tok: torch.Tensor | None = None
    val_tok: torch.Tensor | None = None


@dataclass
class FederationSetup:
    """Frozen pieces shared by all clients and the server (see the module docstring)."""

    tower: FrozenTextTower
    id_bank: PromptBank
    ood_bank: PromptBank | None
    logit_scale: float
    classnames: list[str]
    neg_words: list[str]
    zeroshot_text: torch.Tensor  # (C, e) normalised hand-crafted prompt features
    clients: list[ClientData]
    ood_x: torch.Tensor  # (n_ood, e)
    ood_kind: torch.Tensor  # (n_ood,) 0 far, 1 near
    width: int
    n_ctx: int
    meta: dict = field(default_factory=dict)
    neg_text: torch.Tensor | None = None  # (K_all, e) normalised zero-shot features of the negative words
    ood_tok: torch.Tensor | None = None  # (n_ood, N, e) patch features of the OOD images (FedOTP)

    @property
    def n_classes(self) -> int:
        return len(self.classnames)

    @property
    def device(self) -> torch.device:
        """Where the frozen text tower and the features live (clients train there)."""
        return self.zeroshot_text.device

    def to(self, device) -> FederationSetup:
        """A copy of the setup with the text tower, the prompt banks and every feature tensor on ``device``."""
        import copy
        from dataclasses import fields, replace

        def mv(x):
            return None if x is None else x.to(device)

        clients = [replace(c, **{f.name: mv(getattr(c, f.name)) for f in fields(c)}) for c in self.clients]
        return replace(self, tower=copy.deepcopy(self.tower).to(device), id_bank=self.id_bank.to(device),
                       ood_bank=mv(self.ood_bank), zeroshot_text=mv(self.zeroshot_text), clients=clients,
                       ood_x=mv(self.ood_x), ood_kind=mv(self.ood_kind), neg_text=mv(self.neg_text),
                       ood_tok=mv(self.ood_tok))

    def save(self, path: str | Path) -> Path:
        """Write the setup to ``path`` (``.safetensors``): tensors plus JSON metadata, atomically; no pickle."""
        import json

        from icml25.checkpoint import save_tensors

        if self.tower.arch is None:
            raise FOCoOpConfigError("this setup's text tower is not a plain open_clip Transformer; it cannot be saved")
        path = Path(path)
        if path.suffix != ".safetensors":
            raise FOCoOpConfigError(f"a federation setup is saved as .safetensors, got {str(path)!r}")
        tensors: dict[str, torch.Tensor] = {f"tower.{k}": v for k, v in self.tower.state_dict().items()}
        if self.tower.attn_mask is not None:
            tensors["tower_attn_mask"] = self.tower.attn_mask
        info: dict = {"format": SETUP_FORMAT, "tower_arch": self.tower.arch, "logit_scale": self.logit_scale,
                      "classnames": self.classnames, "neg_words": self.neg_words, "width": self.width,
                      "n_ctx": self.n_ctx, "meta": self.meta, "n_clients": len(self.clients)}
        for name in ("id_bank", "ood_bank"):
            bank = getattr(self, name)
            if bank is None:
                info[name] = None
                continue
            info[name], ts = bank.state()
            tensors.update({f"{name}.{k}": v for k, v in ts.items()})
        for name in ("zeroshot_text", "ood_x", "ood_kind", "neg_text", "ood_tok"):
            if getattr(self, name) is not None:
                tensors[name] = getattr(self, name)
        for j, c in enumerate(self.clients):
            tensors.update({f"clients.{j}.{f}": getattr(c, f) for f in CLIENT_FIELDS + TOKEN_FIELDS
                            if getattr(c, f) is not None})
        tensors = {k: v.detach().contiguous().clone() for k, v in tensors.items()}
        save_tensors(path, tensors, metadata={"focoop": json.dumps(info)})
        return path

    @staticmethod
    def load(path: str | Path) -> FederationSetup:
        """Read a setup written by :meth:`save` (safetensors + JSON metadata; never unpickles anything)."""
        import json

        from icml25.errors import UserInputError
        from safetensors import safe_open

        from focoop.text import FrozenTextTower, PromptBank

        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"federation setup file not found: {path}")
        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                t = {k: f.get_tensor(k) for k in f.keys()}
            info = json.loads(meta["focoop"])
        except Exception as exc:  # SafetensorError, a missing key, bad JSON: not a setup file
            raise UserInputError(f"{str(path)!r} is not a federation setup written by `focoop prepare` / "
                                 f"FederationSetup.save ({type(exc).__name__}: {str(exc)[:120]})") from None
        if info.get("format") != SETUP_FORMAT:
            raise UserInputError(f"{str(path)!r}: unknown setup format {info.get('format')!r} "
                                 f"(expected {SETUP_FORMAT!r})")
        tower = FrozenTextTower.from_arch(info["tower_arch"])
        tower.load_state_dict({k[len("tower."):]: v for k, v in t.items() if k.startswith("tower.")}, strict=True)
        if "tower_attn_mask" in t:
            tower.attn_mask = t["tower_attn_mask"]

        def bank(name: str):
            if info[name] is None:
                return None
            pre = f"{name}."
            return PromptBank.from_state(info[name], {k[len(pre):]: v for k, v in t.items() if k.startswith(pre)})

        clients = [ClientData(**{f: t[f"clients.{j}.{f}"] for f in CLIENT_FIELDS},
                              **{f: t.get(f"clients.{j}.{f}") for f in TOKEN_FIELDS})
                   for j in range(info["n_clients"])]
        return FederationSetup(tower=tower, id_bank=bank("id_bank"), ood_bank=bank("ood_bank"),
                               logit_scale=float(info["logit_scale"]), classnames=list(info["classnames"]),
                               neg_words=list(info["neg_words"]), zeroshot_text=t["zeroshot_text"], clients=clients,
                               ood_x=t["ood_x"], ood_kind=t["ood_kind"], width=int(info["width"]),
                               n_ctx=int(info["n_ctx"]), meta=info["meta"], neg_text=t.get("neg_text"),
                               ood_tok=t.get("ood_tok"))


SETUP_FORMAT = "focoop-federation-setup/1"
CLIENT_FIELDS = ("train_x", "train_y", "test_x", "test_y", "test_c_x", "test_c_y", "val_x", "val_y")
TOKEN_FIELDS = ("train_tok", "test_tok", "test_c_tok", "val_tok")


def check_words(neg_words: Sequence[str], classnames: Sequence[str]) -> None:
    """Reject duplicate class names and negative words that overlap class names."""
    if len(set(classnames)) != len(classnames) or not classnames:
        raise FOCoOpConfigError(f"class names must be non-empty and unique, got {list(classnames)}")
    cls_tokens = {t for c in classnames for t in c.lower().split()}
    bad = [w for w in neg_words if w.lower() in {c.lower() for c in classnames} or set(w.lower().split()) & cls_tokens]
    if bad:
        raise FOCoOpConfigError(f"negative words overlap the ID class names: {bad[:5]}")


def build_setup(*, clip_model, tokenize: Callable, classnames: Sequence[str], neg_words: Sequence[str], n_ctx: int,
                train_x: np.ndarray | torch.Tensor, train_y, test_x, test_y, test_c_x, test_c_y,
                ood_x, ood_kind, client_train: Sequence[np.ndarray], client_test: Sequence[np.ndarray],
                client_test_c: Sequence[np.ndarray] | None = None, zeroshot_template: str = "a photo of a {}.",
                client_val: Sequence[np.ndarray] | None = None, neg_prompts: Sequence[str] | None = None,
                meta: dict | None = None, train_tok=None, test_tok=None, test_c_tok=None,
                ood_tok=None) -> FederationSetup:
    """Assemble a setup from a CLIP model (open_clip layout), its tokenizer and precomputed image features.

    ``client_train``/``client_test`` index into train_x/test_x; ``client_test_c`` into test_c_x (defaults to the
    test indices, i.e. the corrupted copy is aligned with the clean test set); ``client_val`` into train_x (must not
    overlap the client's ``client_train``). ``neg_prompts`` are the hand-crafted texts of the negative words for the
    NegLabel columns (default ``zeroshot_template`` filled with each word). ``*_tok`` are optional patch features
    (rows, N, e) aligned with the corresponding feature arrays (FedOTP's OT logits use them).
    """
    classnames = list(classnames)
    neg_words = list(neg_words)
    check_words(neg_words, classnames)
    ctx_len = int(clip_model.positional_embedding.shape[0])
    tower = FrozenTextTower(clip_model=clip_model)
    id_bank = PromptBank(texts=[f"{c}." for c in classnames], tokenize=tokenize,
                         token_embedding=clip_model.token_embedding, n_ctx=n_ctx, context_length=ctx_len)
    ood_bank = None
    if neg_words:
        ood_bank = PromptBank(texts=[f"{w}." for w in neg_words], tokenize=tokenize,
                              token_embedding=clip_model.token_embedding, n_ctx=n_ctx, context_length=ctx_len)
    if neg_prompts is None:
        neg_prompts = [zeroshot_template.format(w) for w in neg_words]
    if len(neg_prompts) != len(neg_words):
        raise FOCoOpConfigError(f"neg_prompts must have one text per negative word ({len(neg_words)}), "
                                f"got {len(neg_prompts)}")
    with torch.no_grad():
        zs = clip_model.encode_text(torch.as_tensor(tokenize([zeroshot_template.format(c) for c in classnames])))
        zs = F.normalize(zs.float(), dim=-1)
        neg_text = None
        if neg_words:
            neg_text = F.normalize(clip_model.encode_text(torch.as_tensor(tokenize(list(neg_prompts)))).float(),
                                   dim=-1)
        scale = float(clip_model.logit_scale.exp())

    def t(a) -> torch.Tensor:
        return F.normalize(torch.as_tensor(np.asarray(a), dtype=torch.float32), dim=-1)

    def lab(a) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a), dtype=torch.long)

    trx, tr_y, tex, te_y, tcx, tc_y = t(train_x), lab(train_y), t(test_x), lab(test_y), t(test_c_x), lab(test_c_y)
    trt, tet, tct, oot = (None if a is None else t(a) for a in (train_tok, test_tok, test_c_tok, ood_tok))

    def rows(a, i):
        return None if a is None else a[i]

    if client_test_c is None:
        client_test_c = client_test
    if client_val is None:
        client_val = [np.zeros(0, dtype=np.int64)] * len(client_train)
    clients = []
    for j, (tr, te, tc, va) in enumerate(zip(client_train, client_test, client_test_c, client_val, strict=True)):
        if np.intersect1d(np.asarray(tr), np.asarray(va)).size:
            raise FOCoOpConfigError(f"client {j}: the validation split overlaps its training shots")
        tr, te, tc, va = (torch.as_tensor(np.asarray(i, dtype=np.int64)) for i in (tr, te, tc, va))
        clients.append(ClientData(train_x=trx[tr], train_y=tr_y[tr], test_x=tex[te], test_y=te_y[te],
                                  test_c_x=tcx[tc], test_c_y=tc_y[tc], val_x=trx[va], val_y=tr_y[va],
                                  train_tok=rows(trt, tr), test_tok=rows(tet, te), test_c_tok=rows(tct, tc),
                                  val_tok=rows(trt, va)))
    return FederationSetup(tower=tower, id_bank=id_bank, ood_bank=ood_bank, logit_scale=scale,
                           classnames=classnames, neg_words=neg_words, zeroshot_text=zs, clients=clients,
                           ood_x=t(ood_x), ood_kind=lab(ood_kind), width=tower.width, n_ctx=n_ctx, meta=meta or {},
                           neg_text=neg_text, ood_tok=oot)
