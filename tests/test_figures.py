"""Figure styling: a distinct colour for every method, and each method's compatibility margin against its own old model."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.figures import aa_curve_plot, margin_plot, margins, matrices_plot, method_style

FIXTURE = Path(__file__).parent / "fixtures" / "leaderboard_records.json"


def test_every_method_gets_its_own_colour_for_any_number_of_methods():
    for n in (3, 10, 11, 20, 21, 64):
        colours = [tuple(np.round(method_style(i, n)[0], 6)) for i in range(n)]
        assert len(set(colours)) == n, n


def test_margin_is_cross_minus_each_methods_own_old_self_test():
    records = json.loads(FIXTURE.read_text())
    for r in records:  # l2 trained against another old model: its threshold is 34 + 2 x seed, not the others' 30
        if r["scenario"] == "ext-class" and r["method"] == "l2":
            r["metrics"]["cmc@1"]["old_self"] = 34.0 + r["seed"] * 2  # mean 35 over seeds 0 and 1
    table = next(t for t in build_tables(records) if t.scenario == "ext-class")
    found = {row.method: mean for row, mean, _ in margins(table, "cmc@1")}
    # cross means (fixture): l2 34, independent 11, flat 31; old self l2 35, others 30
    assert found == {"l2": -1.0, "independent": -19.0, "flat": 1.0}
    fig = margin_plot(table, "cmc@1")
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [row.label for row in table.rows if row.method in found]


def sequence_records(methods: int, T: int, seeds: int = 2) -> list[dict]:
    """Finished cl2r-kind records of ``methods`` methods over ``T`` models: C[t][k] = 20 + 5k + t + m/10 + seed, except
    that method m's entry (t, k) = (T-1, m % (T-1)) is its gallery's own self-test minus 1 (incompatible); AA_tau
    of method m is 30 + tau + m + seed."""
    records = []
    for m in range(methods):
        for seed in range(seeds):
            M = [[20 + 5 * k + t + m / 10 + seed if k <= t else None for k in range(T)] for t in range(T)]
            M[T - 1][m % (T - 1)] = M[m % (T - 1)][m % (T - 1)] - 1
            curve = [30.0 + tau + m + seed for tau in range(1, T + 1)]
            records.append({"key": f"{m:04x}{seed:012x}", "label": f"s/m{m}/seed{seed}", "scenario": "s", "kind": "cl2r",
                            "method": f"m{m}", "seed": seed, "preset": "p", "dataset": "d", "status": "finished",
                            "config": {"metrics": ["top1"]}, "matrices": {"top1": M},
                            "metrics": {"top1": {"AA": curve[-1], "AC": 0.5, "AA_curve": curve}}})
    return records


def rendered(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def smallest_text_points(fig) -> float:
    from matplotlib.text import Text

    return min(t.get_fontsize() for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible())


def test_matrix_numbers_stay_legible_inside_their_cells_up_to_ten_models():
    from matplotlib.patches import Polygon

    for T, methods, columns in ((2, 5, 4), (5, 18, 4), (10, 18, 3)):
        table = build_tables(sequence_records(methods, T))[0]
        fig = matrices_plot(table, "top1")
        renderer = rendered(fig)
        panels = [ax for ax in fig.axes if ax.get_images()]
        assert len(panels) == methods
        assert len({round(ax.get_position().x0, 3) for ax in panels}) == columns
        assert smallest_text_points(fig) >= 8, T
        for ax in panels:
            corners = [p for p in ax.patches if isinstance(p, Polygon)]
            assert len(corners) == 1  # the one incompatible entry of each method
            corner = corners[0].get_window_extent(renderer)
            numbers = [t for t in ax.texts if t.get_text()]
            assert len(numbers) == T * (T + 1) // 2
            for text in numbers:
                k, t = text.get_position()
                (x0, y0), (x1, y1) = ax.transData.transform([(k - 0.5, t + 0.5), (k + 0.5, t - 0.5)])
                box = text.get_window_extent(renderer)
                assert x0 <= box.x0 and box.x1 <= x1 and y0 <= box.y0 and box.y1 <= y1, (T, text.get_text())
                assert not box.overlaps(corner), (T, text.get_text())


def test_aa_curves_are_one_panel_per_method_with_its_own_mean_over_seeds():
    table = build_tables(sequence_records(18, 10))[0]
    fig = aa_curve_plot(table, "top1")
    rendered(fig)
    panels = [ax for ax in fig.axes if ax.get_lines()]
    assert len(panels) == 18 and smallest_text_points(fig) >= 8
    for ax, row in zip(panels, table.rows):
        m = int(row.method[1:])
        own = next(line for line in ax.get_lines() if line.get_label().startswith("this method"))
        assert list(own.get_ydata()) == [30.0 + tau + m + 0.5 for tau in range(1, 11)]  # mean of seeds 0 and 1
        assert sum(line.get_color() == "0.8" for line in ax.get_lines()) == 17  # every other method, in grey
        assert ax.get_title().startswith(f"m{m}: {40.5 + m:.1f} at tau = 10")
    assert len({ax.get_ylim() for ax in panels}) == 1  # shared axes


def test_a_stored_figure_is_a_palette_png_close_to_matplotlibs_render_and_reproducible(tmp_path):
    """The PNG keeps at most 256 colours; against matplotlib's full-colour render of the same figure, all but a few
    anti-aliased edge pixels (of text on a coloured fill) stay within a small step, and the average moves by far less;
    the same table gives the same bytes."""
    import io

    from PIL import Image

    from benchbackcompat.report.figures import matrices_figure

    table = build_tables(sequence_records(18, 10))[0]
    path = matrices_figure(table, "top1", tmp_path / "a.png")
    stored = Image.open(path)
    assert stored.format == "PNG" and stored.mode == "P" and stored.info.keys() <= {"transparency", "dpi"}
    full = io.BytesIO()
    matrices_plot(table, "top1").savefig(full, format="png")
    reference = np.asarray(Image.open(full).convert("RGB"), dtype=int)
    difference = np.abs(np.asarray(stored.convert("RGB"), dtype=int) - reference).max(axis=2)  # per pixel, of 255
    assert difference.shape == reference.shape[:2] and np.percentile(difference, 99.9) <= 32 and difference.mean() < 1
    assert len(np.unique(reference.reshape(-1, 3), axis=0)) > 256  # so the palette did have to choose
    assert matrices_figure(table, "top1", tmp_path / "b.png").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("methods", [1, 2])
def test_the_aa_figure_of_one_or_two_panels_keeps_its_legend_and_title_inside(methods):
    """A narrow figure (one or two panels) fits its legend and title inside its canvas, nothing clipped."""
    table = build_tables(sequence_records(methods, 4))[0]
    fig = aa_curve_plot(table, "top1")
    renderer = rendered(fig)
    canvas = fig.bbox
    for artist in [*fig.legends, fig._suptitle]:
        box = artist.get_window_extent(renderer)
        assert canvas.x0 <= box.x0 and box.x1 <= canvas.x1 and canvas.y0 <= box.y0 and box.y1 <= canvas.y1, methods


def test_a_cached_figure_is_copied_byte_for_byte_and_any_change_of_its_records_draws_it_again(tmp_path, monkeypatch):
    """The second rendering of the same table copies the stored PNG (nothing drawn); a record that differs in one
    value, another metric or a table that draws nothing are keyed apart; an unwritable cache only costs the copy."""
    from benchbackcompat.report import figures

    monkeypatch.setattr(figures, "FIGURE_CACHE", tmp_path / "cache")
    drawn = []
    original = figures._save
    monkeypatch.setattr(figures, "_save", lambda fig, path: drawn.append(path.name) or original(fig, path))
    records = sequence_records(3, 4)
    table = build_tables(records)[0]
    first = figures.matrices_figure(table, "top1", tmp_path / "first.png").read_bytes()
    again = figures.matrices_figure(build_tables(records)[0], "top1", tmp_path / "again.png")
    assert again.read_bytes() == first and drawn == ["first.png"]
    assert len(list((tmp_path / "cache").glob("*.png"))) == 1

    records[0]["matrices"]["top1"][3][0] += 0.5  # one entry of one seed's matrix
    changed = figures.matrices_figure(build_tables(records)[0], "top1", tmp_path / "changed.png")
    assert drawn == ["first.png", "changed.png"] and changed.read_bytes() != first

    monkeypatch.setattr(figures, "FIGURE_CACHE", tmp_path / "a-file")
    (tmp_path / "a-file").write_text("not a folder")
    assert figures.matrices_figure(table, "top1", tmp_path / "unkept.png").read_bytes() == first
    assert drawn[-1] == "unkept.png"


def test_a_figure_function_that_draws_nothing_is_cached_as_nothing(tmp_path, monkeypatch):
    from benchbackcompat.report import figures

    monkeypatch.setattr(figures, "FIGURE_CACHE", tmp_path / "cache")
    calls = []
    nothing = figures.cached(lambda table, metric, path: calls.append(path) and None)
    table = build_tables(sequence_records(2, 3))[0]
    assert nothing(table, "top1", tmp_path / "x.png") is None and nothing(table, "top1", tmp_path / "y.png") is None
    assert len(calls) == 1 and not (tmp_path / "y.png").exists()


def test_the_cache_keeps_the_most_recently_used_figures(tmp_path, monkeypatch):
    import os

    from benchbackcompat.report import figures

    folder = tmp_path / "cache"
    monkeypatch.setattr(figures, "FIGURE_CACHE", folder)
    monkeypatch.setattr(figures, "CACHE_FILES", 2)
    folder.mkdir()
    for age, name in enumerate(["old.png", "recent.png"]):
        (folder / name).write_bytes(b"png")
        os.utime(folder / name, (1000 + age, 1000 + age))
    table = build_tables(sequence_records(2, 3))[0]
    figures.matrices_figure(table, "top1", tmp_path / "new.png")
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".png") == sorted(
        ["recent.png", f"{figures.figure_key(figures.matrices_figure.__wrapped__, table, 'top1', ())}.png"])
