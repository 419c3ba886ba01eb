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
    """Held-out greedy accuracy of a trained PIPA model (and of its prior), on the CPU (no --device); written to
    evaluation.json in --out."""

    model: Path = Path("runs/pipa/model")
    """Folder written by `pipa train` (lm/ + value_head.safetensors)."""
    prior: str = "testbed"
    """'testbed' or a local HF model dir (the same prior used for training)."""
    n_prompts: int = 400
    """Held-out prompts (operands never seen in training)."""
    prior_steps: int = 200
    """With --prior testbed: SFT steps of the prior."""


def _check_prior_spec(spec: str) -> None:
    if spec != "testbed" and not Path(spec).is_dir():
        raise ValueError(f"--prior must be 'testbed' or an existing local model folder, got {spec!r} "
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


def read_rows(path: Path) -> list[dict]:
    """Read a JSONL preference file; every error names the file, the line and the field."""
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
    rows = []
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
        if not any(all(k in row for k in fmt) for fmt in _FORMATS):
            raise UserInputError(f"{where}: expected the fields prompt + chosen/rejected, completion/label or "
                                 f"steps/step_labels, got {sorted(row)}")
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
    if cfg.n_prompts < 1:  # before the heavy imports (torch, transformers)
        raise ValueError(f"--n-prompts must be an integer >= 1, got {cfg.n_prompts}")
    _check_prior_steps(cfg.prior, cfg.prior_steps)
    _check_prior_spec(cfg.prior)
    from icml25.testbeds import lm

    from pipa.evaluate import greedy_accuracy
    from pipa.model import ValueHeadModel

    model = ValueHeadModel.load(cfg.model)
    prior, tok = _prior(cfg.prior, cfg.prior_steps)
    rd = open_run_dir("pipa", cfg)
    rd.write_config(cfg)
    prompts = [e.prompt for e in lm.make_examples("add_scratchpad", cfg.n_prompts, seed=20_000 + cfg.seed, split="test")]
    res = {"accuracy": greedy_accuracy(model, tok, prompts), "prior_accuracy": greedy_accuracy(prior, tok, prompts),
           "n_prompts": cfg.n_prompts}
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
