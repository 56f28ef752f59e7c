"""Command line of :mod:`learner`: ``python -m learner {demo,learn,sample,info,bench,scaling,peers}``.

Library functions never parse ``argv``; this module does, calls them, and prints. It builds the model's
commands (``demo``, ``learn``, ``sample``, ``info``) and takes the studies' (``bench``, ``scaling``,
``peers``) from :mod:`learner.study.cli`: the command line is the roof of the package, the one module of
``learner``'s floor that reaches the layers above it (``tests/test_packaging.py::TestHouse`` names it).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import textwrap
import time
from collections.abc import Sequence

import numpy as np

from .argparsing import (
    OUTPUT_OPTIONS,
    CommandParser,
    check_output_options,
    cli_device,
    cli_positive_int_or,
    cli_seed,
    command_parser,
    declare_options,
    harden,
    limit_options,
)
from .assumptions import assumptions
from .errors import FileFormatError, LearnInterrupted, PlantingError
from .inputs import sample_inputs
from .instances import DEFAULT_LOGIT_SCALE, DEFAULT_W_SCALE, random_layer
from .io import (
    load_layer,
    read_metadata,
    save_examples,
    save_layer,
    write_json,
)
from .metrics import attention_statistics
from .oracle import NOISE_RULE, LayerOracle, noisy_labels
from .parallel import DEFAULT_POOL, POOL_FROM_EXAMPLES, interrupt_on_sigterm, kill_live_pools, set_ctrl_c
from .phases import CONFIG_RULES
from .study import cli as study_cli
from .sweep.records import command_record
from .tables import REPORT_WIDTH
from .torch_interop import need_torch
from .validation import SIZE_LIMITS, Integer, OrWord, check_memory

__all__ = ["OUTPUT_OPTIONS", "build_parser", "check_output_options", "main"]


def _parameters(args):
    """The command's options as recorded: every parsed argument but the handler."""
    return {key: value for key, value in vars(args).items() if key != "handler"}


def _seed(seed):
    """A SeedSequence from ``--seed`` (fresh entropy when omitted), recorded in every output."""
    return np.random.SeedSequence(seed)


#: The planted layer's flags and their defaults (``sample`` leaves them unset, to tell them apart from --layer).
_LAYER_DEFAULTS = {"m": 2, "d": 8, "logit_scale": DEFAULT_LOGIT_SCALE, "w_scale": DEFAULT_W_SCALE}


def _layer_args(p, *, unset=False, seed=None):
    """The planted layer's flags (their defaults, ``_LAYER_DEFAULTS``, filled in later when ``unset``) and
    ``--seed`` (``seed`` its default; None draws fresh entropy, printed): the help says what each does."""
    dflt = {key: None if unset else value for key, value in _LAYER_DEFAULTS.items()}
    p.add_argument("--m", type=int, default=dflt["m"], help=f"number of heads (default {_LAYER_DEFAULTS['m']})")
    p.add_argument("--d", type=int, default=dflt["d"], help=f"token dimension (default {_LAYER_DEFAULTS['d']})")
    p.add_argument("--logit-scale", type=float, default=dflt["logit_scale"],
                   help=f"‖Θ_i‖_F, the std of off-diagonal logits (default {_LAYER_DEFAULTS['logit_scale']:g}: "
                        "learner.instances.DEFAULT_LOGIT_SCALE)")
    p.add_argument("--w-scale", type=float, default=dflt["w_scale"],
                   help=f"per-entry scale of each head's output (default {_LAYER_DEFAULTS['w_scale']:g})")
    p.add_argument("--seed", type=cli_seed, default=seed,
                   help="integer seed (default: fresh entropy, printed)" if seed is None
                   else f"integer seed: the entropy of every random draw (default {seed})")
    declare_options(p, random_layer)


def build_parser() -> CommandParser:
    """The argparse parser (exposed for tests and documentation).

    Returns
    -------
    CommandParser
        The parser of ``python -m learner``, its sub-commands' options typed by the rules of the functions they
        are passed to and every other numeric option hardened (:func:`~learner.argparsing.harden`).
    """
    parser = command_parser(
        prog="python -m learner",
        description="Multi-head attention layers of Chen & Li (arXiv 2402.04084): planted "
        "instances, their assumption reports, the paper's learner, and the studies of its run time.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_demo, _add_learn, _add_sample, _add_info, study_cli.add_commands):
        add(sub)
    return harden(parser)


def _add_demo(sub):
    p = sub.add_parser("demo", help="the default job: plant a layer, report its assumptions and attention figures")
    _layer_args(p, seed=0)
    p.add_argument("--k", type=int, default=4, help="tokens per sequence (default 4)")
    p.add_argument("--n-samples", type=int, default=20000, help="inputs for the figures (default 20000)")
    p.add_argument("--json", metavar="FILE", help="also write the record as JSON")
    declare_options(p, attention_statistics)
    limit_options(p, {dest: SIZE_LIMITS[dest] for dest in ("m", "d", "k", "n_samples")})
    p.set_defaults(handler=_demo)


def _add_learn(sub):
    p = sub.add_parser("learn", help="the main job: plant a layer and learn it with the six-phase algorithm")
    # the layer's defaults are filled in by _learn (unset tells them apart from --torch-layer)
    _layer_args(p, unset=True, seed=0)
    p.add_argument("--torch-layer", metavar="FILE",
                   help="learn this torch layer instead of a planted one: an nn.MultiheadAttention(d, m, "
                        "bias=False) saved by learner.torch_interop.save_torch_layer (it records m), or its bare "
                        "state dict, torch.save(mha.state_dict(), FILE), with --m its num_heads (extra `torch`)")
    p.add_argument("--k", type=int, default=4, help="tokens per sequence (default 4)")
    p.add_argument("--distribution", choices=("boolean", "gaussian"), default="boolean")
    p.add_argument("--noise", type=float, default=0.0,
                   help="standard deviation of Gaussian noise added to every label entry (default 0: exact labels)")
    p.add_argument("--unknown-m", action="store_true", help="do not tell the learner m (it estimates it)")
    p.add_argument("--max-examples", type=int, default=None,
                   help="example budget of each refined sculpting round (default: chosen from m)")
    p.add_argument("--allow-unsound", action="store_true",
                   help="run even where the setting's soundness conditions fail (learner.assumptions)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (they are shown only when stderr is a terminal)")
    p.add_argument("--workers", type=_workers, default=None,
                   help="local processes for the example-streaming phases; 1 runs in this process "
                        f"(default {DEFAULT_POOL}: every core; not with --scheduler). The pool starts once the run has "
                        f"merged {POOL_FROM_EXAMPLES:,} examples; the result does not depend on it")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="compute the batches on this Dask scheduler instead (extra `distributed`)")
    p.add_argument("--blas-threads", type=_blas_threads, default=1,
                   help="BLAS threads of this process in the phases it computes alone (default 1, the fastest "
                        "measured on 2 cores; 'default' leaves numpy's own setting); workers always have one")
    p.add_argument("--device", type=cli_device("--device"), default=None,
                   help="a torch device ('cuda', 'cuda:1', 'cpu') on which the oracle computes its labels and "
                        "phase 6 searches and refines, on torch tensors (extra torch); default: numpy throughout")
    p.add_argument("--json", metavar="FILE", help="also write the run's record as JSON")
    declare_options(p, LayerOracle, rules={"max_examples": CONFIG_RULES["max_examples"]})
    limit_options(p, {dest: SIZE_LIMITS[dest] for dest in ("m", "d", "k", "max_examples")}
                  | {"logit_scale": SIZE_LIMITS["learn_logit_scale"]})
    p.set_defaults(handler=_learn)


def _add_sample(sub):
    p = sub.add_parser("sample", help="write a planted layer and/or labelled examples to disk")
    _layer_args(p, unset=True)
    p.add_argument("--out", metavar="FILE", help="where to write the layer (.npz)")
    p.add_argument("--layer", metavar="FILE", help="label examples with this saved layer instead of a new one")
    p.add_argument("--examples", metavar="FILE", help="also write labelled examples (X, Y=F(X)) here")
    p.add_argument("--n-samples", type=int, default=10000, help="examples to write (default 10000)")
    p.add_argument("--k", type=int, default=4, help="tokens per sequence (default 4)")
    p.add_argument("--distribution", choices=("boolean", "gaussian"), default="boolean")
    p.add_argument("--noise", type=float, default=0.0,
                   help="standard deviation of Gaussian noise added to every label entry (default 0: Y = F(X))")
    declare_options(p, sample_inputs, rules={"noise": NOISE_RULE})
    limit_options(p, {dest: SIZE_LIMITS[dest] for dest in ("m", "d", "k", "n_samples")})
    p.set_defaults(handler=_sample)


def _add_info(sub):
    p = sub.add_parser("info", help="print the assumption report of a saved layer")
    p.add_argument("path", help="a layer written by `sample`")
    p.add_argument("--k", type=int, default=None, help="sequence length to check k < d against")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    declare_options(p, assumptions)
    limit_options(p, {"k": SIZE_LIMITS["k"]})
    p.set_defaults(handler=_info)


def _demo(args):
    ss = _seed(args.seed)
    layer_seed, stats_seed = ss.spawn(2)
    t0 = time.perf_counter()
    layer = random_layer(args.m, args.d, logit_scale=args.logit_scale, w_scale=args.w_scale, rng=layer_seed)
    report = assumptions(layer, k=args.k)
    stats = attention_statistics(layer, args.k, n_samples=args.n_samples, rng=stats_seed)
    elapsed = time.perf_counter() - t0
    print(f"Planted layer: m={layer.m} heads, d={layer.d}, k={args.k}, logit scale {args.logit_scale}, "
          f"seed entropy {ss.entropy}")
    print()
    print(report)
    print()
    print(f"Figures on {stats.n_samples} fresh {stats.distribution} inputs:")
    for i in range(layer.m):
        print(f"  head {i}: mean largest attention weight {stats.mean_max_weight[i]:.3f} "
              f"(uniform {1 / args.k:.3f}), mean entropy / ln k {stats.mean_normalized_entropy[i]:.3f}")
    print(f"  output RMS entry {stats.output_rms:.3f}")
    print(f"  relative error of uniform attention with the same ΣW: {stats.uniform_attention_error:.3f}"
          " (how much the attention matters)")
    print(f"  rows where all heads agree within TV 0.05 / 0.01: {stats.agree_tv05:.4f} / {stats.agree_tv01:.4f}"
          " (what sculpting can certify)")
    print(f"  time {elapsed:.2f} s")
    if args.json:
        write_json(args.json, command_record(
            "demo", parameters=_parameters(args), seed_entropy=ss.entropy, assumptions=report.to_dict(),
            statistics=stats.__dict__, seconds=elapsed))
    return 0


def _learn(args):
    import dataclasses

    from .learn import learn
    from .oracle import LayerOracle
    from .phases import LearnConfig

    if args.scheduler is not None and args.workers is not None:
        raise ValueError(f"give either --workers (local processes) or --scheduler (a Dask cluster, whose workers "
                         f"are its own), not both; got --workers {args.workers} --scheduler {args.scheduler!r}.")
    if args.scheduler is not None:
        from .parallel import dask_client_class

        # The extra is there, or one line saying how to install it; learn() checks the address (an empty one is
        # named) when it builds its pool, before the first example.
        dask_client_class()
    workers = None if args.scheduler is not None else (DEFAULT_POOL if args.workers is None else args.workers)
    ss = _seed(args.seed)
    # The third child draws the inputs the errors against the truth are measured on (the first two are as before).
    layer_seed, oracle_seed, error_seed = ss.spawn(3)
    if args.torch_layer is not None:
        from .torch_interop import describe_heads, load_torch_layer

        need_torch("--torch-layer")
        given = [key for key in ("d", "logit_scale", "w_scale") if getattr(args, key) is not None]
        if given:
            flags = ", ".join(f"--{key.replace('_', '-')} {getattr(args, key)}" for key in given)
            raise ValueError(f"--torch-layer {args.torch_layer} fixes the layer; {flags} would be ignored. "
                             "Drop them or --torch-layer.")
        try:
            truth = load_torch_layer(args.torch_layer, num_heads=args.m)
        except ValueError as exc:
            if args.m is not None and "heads recorded in" in str(exc):
                raise ValueError(f"--m {args.m} does not match the head count recorded in --torch-layer "
                                 f"{args.torch_layer} ({exc}); drop --m or give the recorded one.") from None
            if args.m is not None and str(exc).startswith("`num_heads`"):  # the library's name for --m
                raise ValueError(str(exc).replace("`num_heads`", "--m", 1).replace(f"num_heads={args.m}",
                                                                                     f"--m {args.m}")) from None
            if args.m is not None or "`num_heads` is needed" not in str(exc):
                raise
            raise ValueError(f"--torch-layer {args.torch_layer} is a bare state dict, which does not record its "
                             "head count: give --m (or save the module with learner.torch_interop.save_torch_layer, "
                             "which records it); got no --m.") from None
        args.m, args.d = truth.m, truth.d
        # A wrong head count for a bare state dict converts without error into another function: say what it implies.
        source = f"the torch layer {args.torch_layer} ({describe_heads(truth)}):"
    else:
        for key, value in _LAYER_DEFAULTS.items():
            if getattr(args, key) is None:
                setattr(args, key, value)
        truth = random_layer(args.m, args.d, logit_scale=args.logit_scale, w_scale=args.w_scale, rng=layer_seed)
        source = f"a planted layer (logit scale {args.logit_scale}):"
    config = LearnConfig()
    if args.max_examples is not None:
        config = dataclasses.replace(config, max_examples=args.max_examples)
    if args.allow_unsound:
        config = dataclasses.replace(config, allow_unsound=True)
    oracle = LayerOracle(truth, args.k, distribution=args.distribution, noise=args.noise, rng=oracle_seed)
    print(f"Learning {source} m={args.m}, d={args.d}, k={args.k}, {args.distribution} inputs, "
          + (f"label noise σ = {args.noise:g}, " if args.noise else "")
          + f"seed entropy {ss.entropy}"
          + (" (m not given to the learner)" if args.unknown_m else ""))

    from .learn import ALLOW_UNSOUND_HINT

    interrupt_on_sigterm()  # `kill` stops the run like Ctrl-C: workers ended
    try:
        # The layer's sharpness is known here (planted, or read): the learner checks it against its reach.
        scale = float(np.linalg.norm(truth.thetas.reshape(truth.m, -1), axis=1).max())
        _check_planted_setting(args, truth, scale)
        result = learn(oracle, m=None if args.unknown_m else args.m, config=config, truth=truth, rng=error_seed,
                       logit_scale=scale, progress=False if args.no_progress else None,
                       workers=workers, scheduler=args.scheduler, blas_threads=args.blas_threads,
                       device=args.device)
    except LearnInterrupted as exc:
        print(exc.result.report())
        print(f"\ninterrupted: {exc.result.message}", file=sys.stderr)
        return 130
    if result.status == "setting":  # the command's option, not the library's
        result = dataclasses.replace(result, message=result.message.replace(
            ALLOW_UNSOUND_HINT, "Pass --allow-unsound to run anyway."))
    print(result.report())
    print(_execution_sentence(result.execution))
    if args.json:
        write_json(args.json, command_record(
            "learn", parameters=_parameters(args), seed_entropy=ss.entropy, config=dataclasses.asdict(config),
            result=result.to_dict()))
    return 0 if result.success else 1


def _execution_sentence(ex):
    """The report's last sentence: where the batches ran, the examples/s of each phase, the BLAS threads."""
    rates = ", ".join(f"{name} {p['examples_per_second']:,.0f}" for name, p in ex.get("phases", {}).items()
                      if p.get("examples_per_second"))
    threads = ex.get("blas_threads")
    threads = (f"{threads['alone']} here alone, {threads['while_workers_stream']} while workers stream; phase 6's "
               f"products on {threads.get('phase6_products', 1)} thread(s)" if isinstance(threads, dict) else threads)
    where = f"{ex.get('backend')} with {ex.get('workers')} worker(s)"
    if ex.get("backend") == "local" and ex.get("pool_started") is False:
        where = (f"this process (the run merged fewer than {ex.get('pool_from', 0):,} examples, below which its pool "
                 f"of {ex.get('workers')} worker(s) is not started)")
    return "\n".join(textwrap.wrap(f"batches: {where}; examples/s: "
                                   f"{rates}; BLAS threads: {threads}", width=REPORT_WIDTH, subsequent_indent="    "))


def _check_planted_setting(args, truth, scale):
    """With --unknown-m the learner is not told m, but this command planted the layer: a setting the learner
    refuses with m given is refused here too, before the first example, rather than searched over m."""
    if not args.unknown_m or args.allow_unsound:
        return
    from .assumptions import check_setting

    planted = check_setting(truth.m, truth.d, args.k, distribution=args.distribution, logit_scale=scale)
    if not planted.ok:
        raise ValueError(f"--unknown-m: the planted layer's setting is one the learner refuses with m given: "
                         f"{planted.message()} Pass --allow-unsound to run anyway.")


def _sample(args):
    if not (args.out or args.examples):
        raise SystemExit("sample: nothing to write; give --out FILE and/or --examples FILE.")
    ss = _seed(args.seed)
    layer_seed, input_seed = ss.spawn(2)
    given = [key for key in _LAYER_DEFAULTS if getattr(args, key) is not None]
    if args.layer and given:
        flags = ", ".join(f"--{key.replace('_', '-')} {getattr(args, key)}" for key in given)
        raise ValueError(f"--layer {args.layer} fixes the layer; {flags} would be ignored. Drop them or --layer.")
    for key, value in _LAYER_DEFAULTS.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    params = _parameters(args)
    if args.layer:
        layer = load_layer(args.layer)
    else:
        layer = random_layer(args.m, args.d, logit_scale=args.logit_scale, w_scale=args.w_scale, rng=layer_seed)
    meta = command_record("sample", parameters=params, seed_entropy=ss.entropy)
    if args.examples:  # before anything is written: the inputs, the labels and the archive's copy, in float64
        check_memory("--n-samples", 3 * 8 * args.n_samples * args.k * layer.d,
                     f"{args.n_samples:,} examples of {args.k} tokens in dimension {layer.d}", args.n_samples)
    if args.out:
        save_layer(args.out, layer, metadata=meta)
        print(f"wrote layer m={layer.m}, d={layer.d} to {args.out}")
    if args.examples:
        rng = np.random.default_rng(input_seed)  # the inputs, then (with --noise) the labels' noise
        X = sample_inputs(args.n_samples, args.k, layer.d, distribution=args.distribution, rng=rng)
        save_examples(args.examples, X, noisy_labels(layer(X), args.noise, rng), metadata=meta)
        print(f"wrote {args.n_samples} {args.distribution} examples (k={args.k}"
              + (f", label noise σ = {args.noise:g}" if args.noise else "") + f") to {args.examples}")
    print(f"seed entropy {ss.entropy}")
    return 0


def _info(args):
    # The report's cost grows as d³ (and the file may inflate to gigabytes): the d limit, from the header.
    layer = load_layer(args.path, max_d=int(SIZE_LIMITS["d"][0]))
    meta = read_metadata(args.path)
    report = assumptions(layer, k=args.k)
    print(f"{args.path}: {layer!r}, written by {meta.get('created_by')}, schema {meta['schema_version']}")
    user = meta.get("metadata") or {}
    if "seed_entropy" in user:
        print(f"seed entropy {user['seed_entropy']}")
    print(report)
    if args.json:
        write_json(args.json, command_record("info", path=args.path, metadata=user, assumptions=report.to_dict()))
    return 0


def _bounded(flag, word, meaning, limit):
    """:func:`~learner.argparsing.cli_positive_int_or` with an upper bound (``limit``: the maximum and how it was
    sized); its ``rule`` says the same, for the tests and the docs."""
    parse, (maximum, why) = cli_positive_int_or(flag, word, meaning), limit

    def bounded(text):
        value = parse(text)
        if isinstance(value, int) and value > maximum:
            raise argparse.ArgumentTypeError(f"`{flag}` must be at most {maximum:,}{why}; got {flag}={value}")
        return value

    bounded.rule = OrWord(word, Integer(maximum=maximum, why=why))  # type: ignore[attr-defined]  # as cli_type's
    return bounded


_workers = _bounded("--workers", "auto", "auto", SIZE_LIMITS["workers"])
_blas_threads = _bounded("--blas-threads", "default", None, SIZE_LIMITS["threads"])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; ``sys.argv[1:]`` when None.

    Returns
    -------
    int
        0 on success; 1 when ``learn``'s run did not succeed; 2 for an error, printed as one line on standard
        error (a bad option, a missing or damaged file, an unreachable scheduler, a planting that failed, memory
        exhausted); 130 on Ctrl-C. A usage error argparse finds exits with status 2 (``SystemExit``) instead.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(name)s: %(message)s")
    handler = args.handler
    try:
        check_output_options(parser, args)
        return handler(args)
    except PlantingError as exc:
        s = getattr(exc, "setting", None)
        if s is None:
            print(f"error: {exc}", file=sys.stderr)
        else:  # the flags as given, not random_layer's parameters
            print(f"error: no layer with --m {s['m']} --d {s['d']} --logit-scale {s['logit_scale']:g} satisfied the "
                  f"paper's assumptions in {s['max_tries']} samples (last failures: {', '.join(s['failed'])}); "
                  "give a larger --d or another --logit-scale.", file=sys.stderr)
        return 2
    except (ValueError, TypeError, FileNotFoundError, FileFormatError, ConnectionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # A Ctrl-C that lands outside the commands' own handling (e.g. a second one while a sweep saves its
        # records, or one before a run starts): one line, the shell's status for SIGINT, no traceback.
        set_ctrl_c(signal.SIG_IGN)  # the command is ending
        kill_live_pools()  # a Ctrl-C in a sweep's own clean-up can leave its pool running
        print(f"\ninterrupted: `{args.command}` stopped by Ctrl-C; finished records are kept (see above).",
              file=sys.stderr)
        return 130
    except MemoryError as exc:
        sizes = ", ".join(f"--{name.replace('_', '-')} {getattr(args, name)}" for name in ("m", "d", "k")
                          if getattr(args, name, None) is not None)
        print(f"error: out of memory in `{args.command}`{f' ({sizes})' if sizes else ''}: the arrays of this "
              f"setting do not fit in RAM{f' ({exc})' if str(exc) else ''}; the layer holds 2md² numbers and "
              "the learner's phase 5 memory grows as d⁴ — lower --d or --m.", file=sys.stderr)
        return 2
