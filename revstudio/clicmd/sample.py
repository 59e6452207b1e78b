"""``revstudio sample RUN -o FILE.npz [-n N] [--temperature T] [--seed S] [--checkpoint ...] [--json]``.

Draws samples from a trained flow: Gaussian noise of the Output's shape run through the inverse
(``revstudio.training.sampling``), written to a ``.npz`` whole or not at all, its arrays named as training
data are. Exit codes: 0 written, 1 the graph has errors, 2 bad usage, a missing run or checkpoint, a graph
that is no flow, a file that cannot be written.
"""
from __future__ import annotations

import argparse

from revstudio.cli import CliError, json_text

from ._runargs import positive_int


def _temperature(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; use e.g. --temperature 0.7") from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; use e.g. -n 16") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too few; draw at least 1 sample")
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; use e.g. --seed 0") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="RUN", help="a run folder of a flow, or a checkpoint / state_dict file")
    parser.add_argument("-o", "--output", metavar="FILE.npz", required=True,
                        help="where the samples go: x (or one array per Input node id), N first")
    parser.add_argument("-n", "--count", type=_count, default=16, metavar="N", help="samples (default 16)")
    parser.add_argument("--temperature", type=_temperature, default=1.0, metavar="T",
                        help="scale of the Gaussian noise z (default 1; below 1, more typical samples)")
    parser.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of the noise (default 0)")
    parser.add_argument("--checkpoint", metavar="last|best|FILE", help="the run's weights: last (default), best "
                        "or a checkpoint / state_dict file")
    parser.add_argument("--project", metavar="FILE", help="the project a bare state_dict was trained from")
    parser.add_argument("--batch-size", type=positive_int, metavar="B", help="samples a batch (default: the run's)")
    parser.add_argument("--device", metavar="D", help="auto | cpu | cuda | cuda:N | mps | xpu (default: the run's)")
    parser.add_argument("--json", action="store_true", help="one JSON object (docs/cli.md)")


def run(args: argparse.Namespace) -> int:
    from revstudio.training.evaluation import EvalError, resolve
    from revstudio.training.sampling import check_settings, draw, write_npz

    try:
        if args.target.endswith((".revs", ".py")):
            raise EvalError(f"{args.target}: is a project, not a trained run; sample draws from a trained flow's "
                            f"weights: give the run folder of a run of it ('revstudio runs {args.target}' lists "
                            f"them; 'revstudio train {args.target}' makes one)")
        check_settings(args.count, args.temperature, args.seed)
        source = resolve(args.target, args.checkpoint, args.project)
        samples = draw(source, count=args.count, temperature=args.temperature, seed=args.seed,
                       device=args.device, batch_size=args.batch_size)
        write_npz(samples, args.output)
    except EvalError as exc:
        raise CliError(str(exc), exc.code) from None
    if args.json:
        print(json_text({**samples.to_json(), "notes": samples.notes}))
        return 0
    shape = "x".join(map(str, samples.z_shape))
    arrays = ", ".join(f"{name} {'x'.join(map(str, shape_))}" for name, shape_ in samples.to_json()["arrays"].items())
    print(f"sampled {samples.count} from {samples.source.weights} on {samples.device}: z ~ N(0, "
          f"{samples.temperature:g}^2) in the shape of Output {samples.output!r} ({shape}), seed {samples.seed}, "
          "run through the inverse")
    print(f"wrote {samples.written}: {arrays} (N first)")
    for note in samples.notes:
        print(f"note: {note}")
    return 0
