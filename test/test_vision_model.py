# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""The shipped cone SVM: file format, recorded metrics and a fresh held-out check."""

import json

from cone_detection.svm_model import (ConeSvmModel, DEFAULT_MODEL_PATH, HogParams, load_model,
                                      save_model)
from cone_detection.tools.train_vision import evaluate_views, recorded_views, SimViews, train
from cone_detection.vision_pipeline import VisionConeDetector
import cv2
import numpy as np
import pytest

#: Unseen track and pose seeds (training uses tracks 0..4).
FRESH_TRACK = 4242
FRESH_SEED = 777
N_VIEWS = 20


@pytest.fixture(scope='module')
def model() -> ConeSvmModel:
    """Return the shipped model."""
    return load_model()


@pytest.fixture(scope='module')
def fresh_metrics(model) -> dict:
    """Fast-mode metrics on freshly rendered views, clean and with N(0, 20^2) noise."""
    det = VisionConeDetector(model=model)

    def run(v):
        return det.detect_camera(v.image, v.K, v.T_vehicle_camera)
    clean = list(SimViews(FRESH_SEED, [FRESH_TRACK], noise_share=0.0).take(N_VIEWS))
    noisy = list(SimViews(FRESH_SEED, [FRESH_TRACK], noise=20.0).take(N_VIEWS))
    return {'clean': evaluate_views(run, clean), 'noise': evaluate_views(run, noisy)}


def test_shipped_model_file_is_portable(model) -> None:
    """Plain JSON with HOG parameters, weights, bias, metrics, seed, versions."""
    with open(DEFAULT_MODEL_PATH, 'r', encoding='utf-8') as stream:
        data = json.load(stream)
    assert data['format'] == 'carla_hil.cone_svm' and data['version'] == 1
    assert data['hog'] == {'win_size': 64, 'block_size': 16, 'block_stride': 8,
                           'cell_size': 8, 'nbins': 9}
    assert len(data['weights']) == HogParams().n_features == model.weights.size
    assert {'python', 'numpy', 'opencv', 'sklearn'} <= set(data['created_by'])
    assert isinstance(data['seed'], int)
    assert model.class_names == ['background', 'cone']


def test_recorded_metrics_meet_goals(model) -> None:
    """The metrics written by training meet the issue's goals within 12 m."""
    m = model.metrics
    clean, noise = m['detection_clean'], m['detection_noise20']
    assert m['eval']['range_m'] == 12.0
    assert clean['recall'] >= 0.95 and clean['precision'] >= 0.98
    assert clean['colour_accuracy'] >= 0.98
    assert abs(clean['recall'] - noise['recall']) <= 0.03
    assert abs(clean['precision'] - noise['precision']) <= 0.03
    assert m['windows']['recall'] >= 0.9  # window precision: see docs/model_card.md


def test_fresh_held_out_views_meet_goals(model, fresh_metrics) -> None:
    """Unseen track: recall >= 95 %, precision >= 98 %, colour >= 98 % within 12 m."""
    clean = fresh_metrics['clean']
    assert clean['tp'] + clean['fn'] >= 50, clean
    assert clean['recall'] >= 0.95, clean
    assert clean['precision'] >= 0.98, clean
    assert clean['colour_accuracy'] >= 0.98, clean
    assert clean['position_rms'] <= 0.35, clean
    rec = model.metrics['detection_clean']
    assert clean['recall'] >= rec['recall'] - 0.03


def test_noise_shifts_metrics_at_most_3_percent(fresh_metrics) -> None:
    """Per-pixel N(0, 20^2) noise moves recall and precision by <= 3 points."""
    clean, noise = fresh_metrics['clean'], fresh_metrics['noise']
    assert abs(clean['recall'] - noise['recall']) <= 0.03, (clean, noise)
    assert abs(clean['precision'] - noise['precision']) <= 0.03, (clean, noise)
    assert noise['colour_accuracy'] >= 0.98


def test_save_load_round_trip(model, tmp_path) -> None:
    """Saving and loading keeps weights (7 digits), threshold and metrics."""
    path = str(tmp_path / 'sub' / 'm.json')
    save_model(model, path)
    back = load_model(path)
    np.testing.assert_allclose(back.weights, model.weights, rtol=1e-6, atol=1e-9)
    assert back.bias == pytest.approx(model.bias)
    assert back.threshold == model.threshold and back.metrics == model.metrics


def test_bad_model_files_name_the_file(model, tmp_path) -> None:
    """Missing, non-JSON, wrong format/version and wrong sizes give clear errors."""
    with pytest.raises(FileNotFoundError, match='missing.json'):
        load_model(str(tmp_path / 'missing.json'))
    cases = {'notjson.json': 'not json {',
             'format.json': json.dumps({'format': 'other'}),
             'version.json': json.dumps(dict(model.to_dict(), version=99)),
             'short.json': json.dumps(dict(model.to_dict(), weights=[0.0] * 10)),
             'nan.json': json.dumps(dict(model.to_dict(), bias=float('nan')))}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=name):
            load_model(str(tmp_path / name))


def test_training_is_deterministic_and_reads_recorded_views(tmp_path) -> None:
    """A tiny run twice with one seed gives identical weights; recorded views load."""
    views = list(SimViews(5, [3], noise_share=0.0).take(2))
    entries = []
    for i, v in enumerate(views):
        cv2.imwrite(str(tmp_path / f'{i}.png'), v.image)
        entries.append({'image': f'{i}.png', 'K': v.K.tolist(),
                        'T_vehicle_camera': v.T_vehicle_camera.tolist(),
                        'cones': [{'x': float(x), 'y': float(y), 'class': c}
                                  for (x, y), c in zip(v.cone_xy.tolist(),
                                                       [('blue', 'yellow', 'orange',
                                                         'big_orange')[k - 1]
                                                        for k in v.cone_class])]})
    (tmp_path / 'labels.json').write_text(json.dumps({'views': entries}))
    loaded = list(recorded_views(str(tmp_path)))
    assert len(loaded) == 2
    np.testing.assert_allclose(loaded[0].cone_xy, views[0].cone_xy)
    kw = {'seed': 3, 'n_train': 4, 'n_val': 2, 'n_test': 2, 'images': str(tmp_path),
          'log': lambda s: None}
    a = train(**kw)
    b = train(**kw)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert a.bias == b.bias and a.threshold == b.threshold
    (tmp_path / 'labels.json').write_text('{"views": [{"image": "0.png"}]}')
    with pytest.raises(ValueError, match='views\\[0\\]'):
        list(recorded_views(str(tmp_path)))
