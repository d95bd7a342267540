"""What a GPU benchmark needs on a lent GPU machine, where the judges' weights cannot travel.

A device call carries at most 64 MiB, so the judges (1 to 3.4 GB) stay here. For timing, the
shapes matter, not the weights (../shared/MODELS.md): the kit carries each model's small files
(config, tokenizer, chat template) and the GPU machine builds the same architecture with random
weights. Every figure measured that way must say so (scripts/gpu_bench.sh titles its tables).

    python scripts/gpu_kit.py prepare        # here: .gpu/ with wheels, model shapes and the data
    python scripts/gpu_kit.py randomize .gpu/shapes /tmp/store   # there: random-weight models

`randomize` writes each judge where localeval's model store keeps it (LOCALEVAL_MODEL_STORE), so
that a registered name finds it with its measured settings, and the embedder as a plain directory
for `--embedder`. No provenance file is written: a random model is never mistaken for the real
one by the answer cache (its fingerprint comes from its files).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / ".gpu"
JUDGES = ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")
EMBEDDER = "all-minilm-l6-v2"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
PROVENANCE = "localeval-model.json"
# What the GPU image lacks of localeval's imports (the device tool's KINDS.md lists what it has),
# pinned to the versions this environment runs; outlines and outlines-core are not imported at run time
# (the tests use outlines-core's regex as the reference meaning of a schema). The
# image's transformers and sentence-transformers are older than these: the same versions travel,
# so that the GPU runs the code the tests here run, with the regex transformers checks for at import
# (the image's torch, tokenizers and hub suit them).
WHEELS = ("llguidance", "pysbd", "jsonschema", "jsonschema-specifications", "referencing",
          "rpds-py", "platformdirs", "transformers", "regex", "sentence-transformers")
GPU_PYTHON = "3.12"
# pip matches a wheel's glibc tag exactly: every one up to the GPU image's (Ubuntu 24.04, glibc 2.39)
PLATFORMS = (*(f"manylinux_2_{n}_x86_64" for n in range(17, 40)), "manylinux2014_x86_64", "manylinux1_x86_64")


def copy_shape(model_dir: Path, dest: Path) -> None:
    """Every file of a model directory but its weights, sub-folders included (a sentence-transformers
    model keeps its pooling settings in one); the provenance file stays behind too."""
    for source in model_dir.rglob("*"):
        if source.is_file() and not source.name.endswith(WEIGHT_SUFFIXES) and source.name != PROVENANCE:
            target = dest / source.relative_to(model_dir)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def randomize(shape: Path, dest: Path, seed: int = 0) -> None:
    """A model directory with the shape's files and random weights of its architecture: a causal LM
    where the config names one, the bare encoder otherwise (an embedder)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(shape)
    causal = any(name.endswith("ForCausalLM") for name in config.architectures or ())
    torch.manual_seed(seed)
    model = (AutoModelForCausalLM if causal else AutoModel).from_config(config, dtype=torch.bfloat16 if causal else None)
    copy_shape(shape, dest)
    model.save_pretrained(dest)


def prepare(kit: Path, data: Path) -> None:
    """Here, with the models installed: the wheels, each model's shape and the data, under `kit`."""
    from localeval import models
    from importlib.metadata import version

    shapes = kit / "shapes"
    for name in (*JUDGES, EMBEDDER):
        spec = models.registry()[name]
        if spec.local_path() is None:
            raise SystemExit(f"{name} is not installed here: {spec.install}")
        shutil.rmtree(shapes / name, ignore_errors=True)
        copy_shape(spec.local_path(), shapes / name)
    (kit / "data").mkdir(parents=True, exist_ok=True)
    shutil.copy2(data, kit / "data" / data.name)
    wheels = kit / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    platforms = [flag for platform in PLATFORMS for flag in ("--platform", platform)]
    pins = [f"{name}=={version(name)}" for name in WHEELS]
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                    "--python-version", GPU_PYTHON, "--implementation", "cp", *platforms, "-d", str(wheels), *pins],
                   check=True)
    size = sum(f.stat().st_size for f in kit.rglob("*") if f.is_file())
    print(f"{kit}: {size / 2**20:.1f} MiB (a device call carries 64 MiB with the working tree)")


def randomize_all(shapes: Path, store: Path) -> None:
    """There: every shape in `shapes` as a random-weight model under `store`."""
    for shape in sorted(p for p in shapes.iterdir() if (p / "config.json").is_file()):
        randomize(shape, store / shape.name)
        print(f"random weights: {store / shape.name}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_parser = commands.add_parser("prepare", help="here: wheels, model shapes and data into .gpu/")
    prepare_parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "dev.jsonl")
    prepare_parser.add_argument("--kit", type=Path, default=KIT)
    randomize_parser = commands.add_parser("randomize", help="there: random-weight models from the shapes")
    randomize_parser.add_argument("shapes", type=Path)
    randomize_parser.add_argument("store", type=Path)
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.kit, args.data)
    else:
        randomize_all(args.shapes, args.store)


if __name__ == "__main__":
    main()
