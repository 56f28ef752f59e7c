"""An option the command would ignore is refused, naming it, before any work (control: the same option where it
counts is accepted)."""

from __future__ import annotations

import pytest

REFUSED = [
    ("lowerbounds", ["lwe", "--name", "one-slab", "--n", "5"], "--name one-slab fixes the instance; --n would be"),
    ("lowerbounds", ["lwe", "--name", "one-slab", "--q", "5", "--max-evaluations", "9"],
     "--q, --max-evaluations would be ignored"),
    ("lowerbounds", ["learn-hard", "--serial", "--workers", "2", "--quick", "--out", "{out}"],
     "--workers sizes the local pool, which --serial does not use"),
    ("learner", ["sharpness", "--adam-seeds", "3", "--seeds", "2", "--out", "{out}"],
     "--adam-seeds 3 exceeds --seeds 2"),
    ("learner", ["bench", "--m", "2"], "--m: options of --certification, --refinement or --profile only"),
    ("learner", ["bench", "--span", "--tol", "0.1", "--k", "3"], "--k, --tol: options of --certification or --profile"),
    ("learner", ["bench", "--span", "--workers", "3"], "--workers sizes the pool of --parallel and --search only"),
    ("learner", ["bench", "--span", "--search"], "give at most one of --parallel, --search, --span,"),
]


@pytest.mark.parametrize(("package", "argv", "words"), REFUSED, ids=[" ".join(a[:3]) for _, a, _ in REFUSED])
def test_refused_before_any_work(tmp_path, capsys, package, argv, words):
    main = __import__(f"{package}.cli", fromlist=["main"]).main
    assert main([a.replace("{out}", str(tmp_path / "out")) for a in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ") and words in captured.err, captured.err
    assert captured.out == "" and not (tmp_path / "out").exists()


def test_control_the_options_where_they_count():
    from learner.cli import main

    assert main(["bench", "--certification", "--quick", "--repeat", "1", "--m", "2", "--d", "6", "--k", "2"]) == 0
    from lowerbounds.cli import main as lb_main

    assert lb_main(["lwe", "--n", "2", "--q", "3", "--secret", "1", "2", "--seed", "0"]) == 0
    assert lb_main(["lwe", "--name", "one-slab", "--seed", "0"]) == 0


def test_learn_workers_without_serial_claims_nothing(tmp_path, capsys):
    from learner.cli import main
    from learner.study.scaling import scaling_study

    out = tmp_path / "study"
    assert main(["scaling", "--m", "1", "--learn-workers", "2", "--quick", "--out", str(out)]) == 2
    assert "--learn-workers 2 spreads one run's batches over a pool, which needs --serial" in capsys.readouterr().err
    with pytest.raises(ValueError, match="`learn_workers` > 1 needs backend='serial'"):
        scaling_study(out, ms=[1], learn_workers=2)
    assert not out.exists()  # neither the command nor the library claimed the folder


def test_a_head_count_for_a_torch_layer_is_named_as_typed(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    from learner.cli import main

    module = torch.nn.MultiheadAttention(8, 2, bias=False, batch_first=True).double()
    torch.save(module.state_dict(), tmp_path / "sd.pt")
    assert main(["learn", "--torch-layer", str(tmp_path / "sd.pt"), "--m", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --m must be a positive divisor of embed_dim=8; got --m 3") and "num_heads" not in err
