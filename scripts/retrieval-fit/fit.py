#!/usr/bin/env python3
"""Fits the second stage's weights (crates/dandori-repo/src/retrieval/rerank.rs)
from the JSON lines `cargo run --release -p dandori-repo --example
rank_features` writes (docs/retrieval.md, "Refitting the second stage").

  fit.py cv    SET=FILE[,FILE…] … [--C 0.01] [--exclude NAME,…]
  fit.py final SET=FILE[,FILE…] … [--C 0.01] [--exclude NAME,…] [--scale 4]
  fit.py score SET=FILE[,FILE…] … [--weights rerank.rs]

`cv` predicts each set's instances of one repository with a model fitted on
everything else (the other sets keep that repository's past fixes); `final`
fits on everything and prints the `WEIGHTS` array; `score` ranks with the
weights compiled in rerank.rs (they must reproduce the binary's `on` order).
Model: logistic regression on pairs (a patched file, one of the 20
best-ranked other candidates), L2, no intercept, features scaled to unit RMS
for the fit, each instance weighing the same. Needs numpy and scikit-learn.
"""
import argparse
import json
import pathlib
import re

import numpy as np
from sklearn.linear_model import LogisticRegression

RERANK = pathlib.Path(__file__).resolve().parents[2] / 'crates/dandori-repo/src/retrieval/rerank.rs'


def feature_names(src):
    body = src[src.index('pub const FEATURE_NAMES'):]
    body = body[:body.index('];')]
    return re.findall(r'"(\w+)"', body)


def compiled_weights(src):
    body = src[src.index('const WEIGHTS'):]
    body = body[body.index('[', body.index('=')) + 1:body.index('];')]
    return np.array([float(x) for x in re.findall(r'(-?\d+\.\d+),', body)])


def load(spec, n):
    name, files = spec.split('=', 1)
    out = []
    for f in files.split(','):
        for line in open(f):
            j = json.loads(line)
            X = np.array([c['f'] for c in j['cands']], dtype=float).reshape(len(j['cands']), n)
            y = np.array([c['p'] in j['patched'] for c in j['cands']], dtype=bool)
            out.append(dict(set=name, repo=j['repo'], X=X, y=y, j=j))
    return name, out


def hits(insts, score):
    h = np.zeros(3)
    for it in insts:
        if len(it['X']) == 0:
            continue
        order = np.argsort(-score(it['X']), kind='stable')
        pos = np.where(it['y'][order])[0]
        rank = pos[0] + 1 if len(pos) else 10**6
        h += [rank <= 1, rank <= 5, rank <= 10]
    return h / max(1, len(insts))


def fit(insts, cols, C, n, depth=20):
    D, W = [], []
    for it in insts:
        X, y = it['X'][:, cols], it['y']
        P, N = np.where(y)[0], np.where(~y)[0][:depth]
        if len(P) == 0 or len(N) == 0:
            continue
        d = (X[P][:, None, :] - X[N][None, :, :]).reshape(-1, len(cols))
        D.append(d)
        W.append(np.full(len(d), 1.0 / len(d)))
    D, W = np.vstack(D), np.concatenate(W)
    X, y, w = np.vstack([D, -D]), np.concatenate([np.ones(len(D)), np.zeros(len(D))]), np.concatenate([W, W])
    scale = np.sqrt((X**2 * w[:, None]).sum(0) / w.sum()) + 1e-9
    m = LogisticRegression(C=C, fit_intercept=False, max_iter=5000).fit(X / scale, y, sample_weight=w * len(w) / w.sum())
    coef = np.zeros(n)
    coef[cols] = m.coef_[0] / scale
    return coef


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('mode', choices=['cv', 'final', 'score'])
    ap.add_argument('sets', nargs='+')
    ap.add_argument('--C', type=float, default=0.01)
    ap.add_argument('--exclude', default='frame_caller')
    ap.add_argument('--scale', type=float, default=4.0)
    ap.add_argument('--weights', default=str(RERANK))
    a = ap.parse_args()
    src = RERANK.read_text()
    names = feature_names(src)
    data = dict(load(s, len(names)) for s in a.sets)
    everything = [i for v in data.values() for i in v]
    cols = [k for k, nm in enumerate(names) if nm not in a.exclude.split(',')]
    if a.mode == 'score':
        w = compiled_weights(pathlib.Path(a.weights).read_text())
        for s, insts in data.items():
            print(s, len(insts), 'hit@1/5/10', np.round(hits(insts, lambda X: X @ w), 3))
        return
    if a.mode == 'cv':
        for s, insts in data.items():
            total = np.zeros(3)
            for repo in sorted({i['repo'] for i in insts}):
                train = [i for i in everything if not (i['set'] == s and i['repo'] == repo)]
                coef = fit(train, cols, a.C, len(names))
                test = [i for i in insts if i['repo'] == repo]
                total += hits(test, lambda X: X @ coef) * len(test)
            print(s, len(insts), 'first stage', np.round(hits(insts, lambda X: -np.arange(len(X))), 3),
                  'cross-validated', np.round(total / len(insts), 3))
        return
    coef = fit(everything, cols, a.C, len(names)) / a.scale
    print('const WEIGHTS: [f32; FEATURES] = [')
    for nm, c in zip(names, coef):
        print(f'    {c:.4f}, // {nm}')
    print('];')


if __name__ == '__main__':
    main()
