"""Command line of pipa: ``pipa make-data | train | evaluate | reproduce``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from icml25.cli_helpers import (
    BaseOptions,
    CommonOptions,
    ReproduceOptions,
    method_main,
    open_run_dir,
    reproduce_command,
)

from pipa import config as _config
from pipa.registry import METHOD


@dataclass(frozen=True)
class MakeDataConfig(BaseOptions):
    """Train (or load from cache) the noisy-scratchpad prior p⁰ and write labelled preference data as JSONL (on the
    CPU: the prior is a tiny LM, so there is no --device)."""

    n_prompts: int = 400
    """Prompts to sample completions for."""
    k: int = 4
    """Completions sampled per prompt (temperature 1)."""
    prior_steps: int = 200
    """SFT steps of the prior on noisy scratchpads (stopped early so its samples mix right and wrong)."""
    step_error: float = 0.15
    """Probability that a column step of the prior's training data is wrong."""


@dataclass(frozen=True)
class TrainConfig(CommonOptions):
    """Align a policy with PIPA-M or PIPA-N on a JSONL dataset (paired, unpaired or step format)."""

    PRESETS = {"cpu": _config.cpu, "paper": _config.paper}  # pipa.config.TrainPreset: this command's own fields

    data: Path = Path("data.jsonl")
    """JSONL rows: prompt/chosen/rejected, prompt/completion/label, or prompt/steps/step_labels."""
    prior: str = "testbed"
    """The prior p⁰ (also the starting policy): 'testbed' (the noisy-scratchpad tiny LM) or a local HF model dir."""
    variant: Literal["M", "N"] = "N"
    """PIPA-M (marginal prior) or PIPA-N (negative-conditional prior)."""
    pairing: Literal["independent", "one-positive"] = "independent"
    """Paired data: 'independent' (chosen as c=1, rejected as c=0, the paper's unpaired loss on both) or
    'one-positive' (condition on exactly one positive; PIPA-N is then DPO at beta 1)."""
    steps: int = 80
    """Optimizer steps."""
    lr: float = 2e-5
    """Learning rate."""
    batch_size: int = 16
    """Rows per step (pairs count as one row)."""
    max_length: int = 64
    """Longest <s> prompt completion </s>; longer rows are an error."""
    lora_r: int = 0
    """LoRA rank through peft (0: full fine-tuning)."""
    prior_steps: int = 200
    """With --prior testbed: SFT steps of the prior."""
    log_every: int = 10
    """Log the training loss (averaged over all processes under DDP) every this many steps."""


@dataclass(frozen=True)
class EvaluateConfig(BaseOptions):
    """Evaluate a causal LM on the CPU (no --device); written to evaluation.json in --out.

    --model: a `pipa train` checkpoint or any local transformers causal LM folder (save_pretrained, tokenizer beside
    it). Without --data: greedy accuracy on the test bed's held-out additions (test-bed models). With --data FILE.jsonl
    (one format per file): prompt/answer rows give greedy accuracy (the completion's last whitespace- or
    '|'-separated piece == answer); prompt/chosen/rejected (trl's DPO format) give preference accuracy, margin and
    AUC of the implicit reward log pi - log p0; prompt/completion/label (trl's KTO format) and
    prompt/steps/step_labels give its AUC per completion / per step (and, for a PIPA checkpoint, the AUCs of the
    value head g and of the posterior p(c=1|x,y))."""

    model: Path = Path("runs/pipa/model")
    """A `pipa train` model folder (lm/ + value_head.safetensors) or any local transformers causal LM folder."""
    data: Path | None = None
    """JSONL rows: prompt/answer, prompt/chosen/rejected, prompt/completion/label or prompt/steps/step_labels."""
    prior: str = "testbed"
    """The reference p0: 'testbed', a local HF model dir, or 'none' (scores are log pi, no prior accuracy)."""
    n_prompts: int = 400
    """Without --data: held-out test-bed prompts (operands never seen in training)."""
    prior_steps: int = 200
    """With --prior testbed: SFT steps of the prior."""
    variant: Literal["M", "N"] = "N"
    """Which PIPA posterior to score for a PIPA checkpoint."""
    max_length: int = 256
    """Longest [BOS] prompt completion [EOS] in tokens; longer rows are an error."""
    max_new_tokens: int = 24
    """Greedy generation length for prompt/answer rows."""
    batch_size: int = 32
    """Rows per forward pass."""


def _check_prior_spec(spec: str, *, allow_none: bool = False) -> None:
    if spec == "none" and allow_none:
        return
    if spec != "testbed" and not Path(spec).is_dir():
        extra = ", 'none'" if allow_none else ""
        raise ValueError(f"--prior must be 'testbed'{extra} or an existing local model folder, got {spec!r} "
                         "(hub ids are not loaded here: download the model first)")


def _prior(spec: str, prior_steps: int):
    _check_prior_spec(spec)
    if spec == "testbed":
        from pipa.data import noisy_prior

        return noisy_prior(steps=prior_steps, seed=0)
    path = Path(spec)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return (AutoModelForCausalLM.from_pretrained(path, local_files_only=True),
            AutoTokenizer.from_pretrained(path, local_files_only=True))


_TEXT_FIELDS = ("prompt", "chosen", "rejected", "completion")
_FORMATS = (("chosen", "rejected"), ("completion", "label"), ("steps", "step_labels"))
_ANSWER = (("answer",),)


def read_rows(path: Path, *, answers: bool = False) -> list[dict]:
    """Read a JSONL preference file (``answers=True``: prompt/answer rows too); every error names the file, the line
    and the field; all rows must share one format."""
    import math

    from icml25.errors import UserInputError

    if not path.exists():
        raise FileNotFoundError(f"--data {path} does not exist (make one with `pipa make-data`)")
    if not path.is_file():
        raise UserInputError(f"--data {str(path)!r} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserInputError(f"--data {str(path)!r} is not a UTF-8 text (JSONL) file") from None
    rows: list[dict] = []
    first_fmt: tuple[str, ...] = ()
    first_line = 0
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"--data {str(path)!r} line {i}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserInputError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(row, dict):
            raise UserInputError(f"{where}: each line must be a JSON object, got {type(row).__name__}")
        if not isinstance(row.get("prompt"), str):
            raise UserInputError(f"{where}: field 'prompt' must be a string, got {row.get('prompt')!r}")
        formats = _FORMATS + (_ANSWER if answers else ())
        fmt = next((f for f in formats if all(k in row for k in f)), None)
        if fmt is None:
            extra = " or answer" if answers else ""
            raise UserInputError(f"{where}: expected the fields prompt + chosen/rejected, completion/label or "
                                 f"steps/step_labels{extra}, got {sorted(row)}")
        if rows and fmt != first_fmt:
            raise UserInputError(f"{where}: fields {'/'.join(fmt)} but line {first_line} has {'/'.join(first_fmt)}: "
                                 "one format per file")
        if not rows:
            first_fmt, first_line = fmt, i
        if "answer" in fmt and not isinstance(row["answer"], (str, int)):
            raise UserInputError(f"{where}: field 'answer' must be a string, got {row['answer']!r}")
        for k in _TEXT_FIELDS:
            if k in row and not isinstance(row[k], str):
                raise UserInputError(f"{where}: field {k!r} must be a string, got {row[k]!r}")
        if "label" in row and (not isinstance(row["label"], (bool, int, float)) or
                               (isinstance(row["label"], float) and math.isnan(row["label"]))):
            raise UserInputError(f"{where}: field 'label' must be 0/1 or true/false, got {row['label']!r}")
        if "steps" in row and (not isinstance(row["steps"], list) or not all(isinstance(x, str) for x in row["steps"])):
            raise UserInputError(f"{where}: field 'steps' must be a list of strings")
        rows.append(row)
    if not rows:
        raise UserInputError(f"--data {str(path)!r} holds no rows")
    return rows


def _check_prior_steps(spec: str, prior_steps: int) -> None:
    if spec == "testbed" and prior_steps < 1:
        raise ValueError(f"--prior-steps must be an integer >= 1, got {prior_steps}")


def make_data(cfg: MakeDataConfig) -> int:
    from icml25.errors import check_non_negative, check_positive

    check_positive(cfg, "n_prompts", "k", "prior_steps", prefix="--")  # before the heavy imports (torch, transformers)
    check_non_negative(cfg, "step_error", prefix="--")
    if cfg.step_error > 1:
        raise ValueError(f"--step-error must be a probability in [0, 1], got {cfg.step_error}")
    from icml25.testbeds import lm

    from pipa.data import (
        label_samples,
        noisy_prior,
        paired_rows,
        sample_completions,
        step_paired_rows,
        step_rows,
        step_unpaired_rows,
        unpaired_rows,
    )

    rd = open_run_dir("pipa", cfg)
    rd.write_config(cfg)
    prior, tok = noisy_prior(steps=cfg.prior_steps, seed=0, step_error=cfg.step_error)
    prompts = [e.prompt for e in lm.make_examples("add_scratchpad", cfg.n_prompts, seed=cfg.seed, split="train")]
    samples = label_samples(prompts, sample_completions(prior, tok, prompts, k=cfg.k, seed=cfg.seed))
    for name, rows in (("paired", paired_rows(samples, seed=cfg.seed)), ("unpaired", unpaired_rows(samples)),
                       ("step", step_rows(samples)), ("step_paired", step_paired_rows(samples, seed=cfg.seed)),
                       ("step_unpaired", step_unpaired_rows(samples))):
        rd.write_text(f"{name}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
        if not cfg.quiet:
            print(f"{name}: {len(rows)} rows -> {rd.target / (name + '.jsonl')}")
    return 0


def train(cfg: TrainConfig) -> int:
    """Train; under ``accelerate launch``/``torchrun`` (DDP) every process trains on its shard of each global batch
    and only the main process (``RANK`` 0) writes the run folder."""
    import copy
    import os
    import tempfile

    from icml25.errors import check_non_negative, check_positive

    check_positive(cfg, "steps", "batch_size", "max_length", "log_every", prefix="--")
    check_positive(cfg, "lr", integer=False, prefix="--")
    check_non_negative(cfg, "lora_r", prefix="--")
    _check_prior_steps(cfg.prior, cfg.prior_steps)
    _check_prior_spec(cfg.prior)
    rows = read_rows(cfg.data)  # all inputs are checked before the heavy imports (trl, transformers)

    from icml25.device import resolve_device
    from icml25.seeding import seed_everything

    from pipa.trainer import PIPAConfig, PIPATrainer
    on_cpu = resolve_device(cfg.device).type == "cpu"  # auto: cuda where there is one (the HF Trainer places it)
    seed_everything(cfg.seed)
    main_process = int(os.environ.get("RANK", "0")) == 0
    multi = int(os.environ.get("WORLD_SIZE", "1")) > 1  # launched by accelerate launch / torchrun
    scratch = None
    if main_process:
        rd = open_run_dir("pipa", cfg)
        rd.write_config(cfg)
        trainer_dir = str(rd.path / "trainer")
    else:  # other DDP ranks write nothing the user sees
        scratch = tempfile.TemporaryDirectory()
        trainer_dir = scratch.name
    prior, tok = _prior(cfg.prior, cfg.prior_steps)
    peft_config = None
    if cfg.lora_r > 0:
        from peft import LoraConfig

        peft_config = LoraConfig(r=cfg.lora_r, lora_alpha=2 * cfg.lora_r, target_modules="all-linear")
    args = PIPAConfig(output_dir=trainer_dir, variant=cfg.variant, pairing=cfg.pairing, max_steps=cfg.steps,
                      learning_rate=cfg.lr, per_device_train_batch_size=cfg.batch_size, seed=cfg.seed,
                      use_cpu=on_cpu, max_length=cfg.max_length, logging_steps=cfg.log_every,
                      disable_tqdm=cfg.quiet, ddp_backend="gloo" if multi and on_cpu else None)
    trainer = PIPATrainer(model=copy.deepcopy(prior), ref_model=copy.deepcopy(prior), args=args, train_dataset=rows,
                          processing_class=tok, peft_config=peft_config)
    trainer.train()
    if not main_process:
        scratch.cleanup()
        return 0
    for rec in trainer.state.log_history:
        rd.log(rec.get("step"), **{k: v for k, v in rec.items() if k != "step"})
    model = trainer.accelerator.unwrap_model(trainer.model)
    if peft_config is not None:
        model.lm = model.lm.merge_and_unload()
    model.save(rd.path / "model")
    tok.save_pretrained(rd.path / "model" / "lm")
    if not cfg.quiet:
        print(f"model written to {rd.target / 'model'}")
    return 0


def evaluate(cfg: EvaluateConfig) -> int:
    from icml25.errors import check_positive

    check_positive(cfg, "n_prompts", "max_length", "max_new_tokens", "batch_size", prefix="--")  # before torch
    _check_prior_steps(cfg.prior, cfg.prior_steps)
    _check_prior_spec(cfg.prior, allow_none=True)
    if not cfg.model.exists():
        raise FileNotFoundError(f"--model {cfg.model} does not exist")
    rows = read_rows(cfg.data, answers=True) if cfg.data is not None else None

    from pipa.evaluate import evaluate_rows, greedy_accuracy, load_causal_lm

    lm_, tok, value_model = load_causal_lm(cfg.model)
    prior, prior_tok = (None, None) if cfg.prior == "none" else _prior(cfg.prior, cfg.prior_steps)
    tok = tok if tok is not None else prior_tok
    if tok is None:
        raise ValueError(f"--model {cfg.model} has no tokenizer beside it and --prior is 'none': save the tokenizer "
                         "with the model (tokenizer.save_pretrained)")
    if prior is not None and prior.config.vocab_size != lm_.config.vocab_size:
        raise ValueError(f"--prior has vocab_size {prior.config.vocab_size} but --model has "
                         f"{lm_.config.vocab_size}: give the model's own reference with --prior DIR or --prior none")
    rd = open_run_dir("pipa", cfg)
    rd.write_config(cfg)
    if rows is None:
        from icml25.testbeds import lm

        prompts = [e.prompt for e in lm.make_examples("add_scratchpad", cfg.n_prompts, seed=20_000 + cfg.seed,
                                                      split="test")]
        res = {"format": "testbed additions", "accuracy": greedy_accuracy(lm_, tok, prompts),
               "n_prompts": cfg.n_prompts}
        if prior is not None:
            res["prior_accuracy"] = greedy_accuracy(prior, tok, prompts)
    else:
        res = evaluate_rows(lm_, tok, rows, ref=prior, value_model=value_model if prior is not None else None,
                            variant=cfg.variant, max_length=cfg.max_length, max_new_tokens=cfg.max_new_tokens,
                            batch_size=cfg.batch_size)
        res["data"] = str(cfg.data)
    rd.write_json("evaluation.json", res)
    if not cfg.quiet:
        print(json.dumps(res, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return method_main(METHOD, {
        "make-data": (MakeDataConfig, make_data),
        "train": (TrainConfig, train),
        "evaluate": (EvaluateConfig, evaluate),
        "reproduce": (ReproduceOptions, reproduce_command(METHOD)),
    }, argv=argv)
