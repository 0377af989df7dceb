"""Which job script speaks for a run (`jobscripts.request_for`), through the index a campaign's
run grouping builds once (`jobscripts.Scripts`): the same answer as the module docstring's
rules applied by scanning every script, on a campaign of many weekly folders whose scripts
name their logs by Slurm output patterns, by literal names, or not at all."""

from __future__ import annotations

import random
from pathlib import PurePosixPath

from roofreport.pipeline import jobscripts
from roofreport.pipeline.jobscripts import JobRequest, Script, Scripts, output_pattern, read_request, request_for


def _by_scanning(logs, names_gpu, scripts):
    """The rules as the module docstring says them, every script looked at for every run."""
    asking = [s for s in scripts if s.request.gpus is not None]
    if not asking or not logs:
        return None
    names = [rel.name for _, rel in logs]
    named = [s for s in asking if s.request.output and s.root == logs[0][0]
             and any(output_pattern(s.request.output).match(n) for n in names)]
    if named and len({s.request.gpus for s in named}) == 1:
        return named[0]
    root, first = logs[0]
    for folder in [first.parent, *first.parent.parents]:
        here = [s for s in asking if s.root == root and s.rel.parent == folder]
        if here:
            return jobscripts._agreeing(here, names_gpu, names)
    return None


def _campaign(weeks: int, seed: int = 5):
    """Scripts and runs' logs of `weeks` weekly folders, as course folders keep them."""
    rng = random.Random(seed)
    scripts, runs = [], []
    for week in range(1, weeks + 1):
        for model in ("alexnet", "vgg16", "resnet18"):
            folder = PurePosixPath(f"week{week}/{model}")
            gpu_type = rng.choice(["k80", "p40", None])
            count = rng.choice([1, 2, 4])
            gres = f"gpu:{gpu_type}:{count}" if gpu_type else f"gpu:{count}"
            output = rng.choice([f"out.{model}_{week}_%j", f"%x.{week}.out", f"{model}.log", None])
            text = f"#!/bin/bash\n#SBATCH --gres={gres}\n#SBATCH --job-name={model}\n"
            if output:
                text += f"#SBATCH --output={output}\n"
            text += "python train.py\n"
            request = read_request(text)
            scripts.append(Script(folder / f"run_{model}.sbatch", "camp", request))
            if rng.random() < 0.3:   # a second script of the folder, edited
                scripts.append(Script(folder / f"run_{model}_b.sbatch", "camp",
                                      JobRequest("slurm", rng.choice([1, 4]), gpu_type, None, "--gres=gpu:4")))
            for job in range(3):
                name = rng.choice([f"out.{model}_{week}_{800000 + job}", f"{model}.{week}.out", f"{model}.log",
                                   f"other_{job}.txt"])
                sub = folder / rng.choice(["", "results", "results/k80"])
                runs.append([("camp", PurePosixPath(sub) / name)])
    scripts.append(Script(PurePosixPath("top.sbatch"), "camp", JobRequest("slurm", 8, None, "slurm-%j.out", "-G 8")))
    scripts.append(Script(PurePosixPath("week1/x.sbatch"), "elsewhere", JobRequest("slurm", 2, None, "%x.1.out", "-G 2")))
    runs.append([("camp", PurePosixPath("week3/slurm-12345.out"))])
    runs.append([("other", PurePosixPath("week1/alexnet/alexnet.1.out"))])
    return scripts, runs


def test_the_index_finds_the_script_that_scanning_every_script_finds():
    scripts, runs = _campaign(12)
    indexed = Scripts(scripts)
    for names_gpu in (None, lambda gpu_type: gpu_type == "k80"):
        answers = [request_for(logs, names_gpu, indexed) for logs in runs]
        assert answers == [_by_scanning(logs, names_gpu, scripts) for logs in runs]
        assert answers == [request_for(logs, names_gpu, scripts) for logs in runs]   # (a plain list too)
    found = [a for a in answers if a is not None]
    # (the campaign exercises each rule: output patterns, literal names, the run's folder, a folder above)
    assert len(found) > len(runs) // 3
    assert any(a.request.output and "%j" in a.request.output for a in found)
    assert any(a.rel == PurePosixPath("top.sbatch") for a in found)
    assert request_for([("other", PurePosixPath("week1/alexnet/alexnet.1.out"))], None, indexed) is None


def test_an_output_pattern_matches_by_its_literal_start_and_its_fields():
    scripts = [Script(PurePosixPath("a/s1.sh"), "r", JobRequest("slurm", 4, None, "out.alexnet_%j", "x")),
               Script(PurePosixPath("a/s2.sh"), "r", JobRequest("slurm", 2, None, "%x-%j.log", "y")),
               Script(PurePosixPath("b/s3.sh"), "r", JobRequest("slurm", 1, None, "exact.txt", "z"))]
    indexed = Scripts(scripts)
    assert indexed.named("r", ["out.alexnet_805184"]) == [scripts[0]]
    assert indexed.named("r", ["out.alexnet_x"]) == []               # %j is digits
    assert indexed.named("r", ["train-77.log"]) == [scripts[1]]      # a pattern starting with a field
    assert indexed.named("r", ["exact.txt", "out.alexnet_1"]) == [scripts[0], scripts[2]]   # in the order found
    assert indexed.named("q", ["exact.txt"]) == []                   # another input's scripts
