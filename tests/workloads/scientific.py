"""The scientific Python stack as a data-analysis step uses it: numpy (BLAS on
threads), pandas, scipy, matplotlib (a PNG written to the workdir),
scikit-learn and pillow. Prints one line per check; any failure raises."""
import os
import sys

wd = os.getcwd()


def check(name, fn):
    fn()
    print("ok", name, flush=True)


def numpy_checks():
    import numpy as np

    a = np.random.default_rng(0).standard_normal((400, 400))
    inv = np.linalg.inv(a)
    assert np.allclose(a @ inv, np.eye(400), atol=1e-6)
    w = np.linalg.eigvalsh(a + a.T)
    assert w.shape == (400,)
    np.save(os.path.join(wd, "a.npy"), a)
    assert np.array_equal(np.load(os.path.join(wd, "a.npy")), a)
    assert np.fft.fft(np.ones(8))[0] == 8


def pandas_checks():
    import numpy as np
    import pandas as pd

    df = pd.DataFrame({"k": list("abcabc"), "v": np.arange(6.0),
                       "t": pd.date_range("2024-01-01", periods=6, freq="h", tz="Europe/Paris")})
    g = df.groupby("k")["v"].sum()
    assert g.to_dict() == {"a": 3.0, "b": 5.0, "c": 7.0}, g
    path = os.path.join(wd, "df.csv")
    df.to_csv(path, index=False)
    back = pd.read_csv(path, parse_dates=["t"])
    assert len(back) == 6
    assert str(df["t"].dt.tz_convert("UTC").iloc[0]) == "2023-12-31 23:00:00+00:00"
    pivot = df.pivot_table(index="k", values="v", aggfunc="mean")
    assert pivot.shape == (3, 1)


def scipy_checks():
    import numpy as np
    from scipy import linalg, optimize, sparse, stats
    from scipy.sparse.linalg import spsolve

    r = optimize.minimize(lambda x: (x[0] - 3) ** 2 + (x[1] + 1) ** 2, [0, 0])
    assert np.allclose(r.x, [3, -1], atol=1e-4), r.x
    m = sparse.random(200, 200, density=0.05, random_state=1) + sparse.eye(200) * 10
    x = spsolve(m.tocsc(), np.ones(200))
    assert np.allclose(m @ x, np.ones(200))
    assert abs(stats.norm.cdf(0) - 0.5) < 1e-12
    lu = linalg.lu_factor(np.eye(3) * 2)
    assert np.allclose(linalg.lu_solve(lu, np.ones(3)), 0.5)


def matplotlib_checks():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 4, 9], label="squares")
    ax.set_title("runsbx")
    ax.legend()
    path = os.path.join(wd, "plot.png")
    fig.savefig(path, dpi=50)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def sklearn_checks():
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 1, (50, 2)), rng.normal(6, 1, (50, 2))])
    y = np.array([0] * 50 + [1] * 50)
    assert LogisticRegression().fit(x, y).score(x, y) > 0.95
    km = KMeans(n_clusters=2, n_init=3, random_state=0).fit(x)
    assert len(set(km.labels_)) == 2


def pillow_checks():
    from PIL import Image, ImageDraw, ImageFilter

    im = Image.new("RGB", (64, 64), "white")
    ImageDraw.Draw(im).rectangle([8, 8, 56, 56], fill="red")
    im = im.filter(ImageFilter.GaussianBlur(2))
    for ext in ("png", "jpeg"):
        path = os.path.join(wd, "im." + ext)
        im.save(path)
        with Image.open(path) as back:
            assert back.size == (64, 64)


only = sys.argv[1:]
for name, fn in [("numpy", numpy_checks), ("pandas", pandas_checks), ("scipy", scipy_checks),
                 ("matplotlib", matplotlib_checks), ("sklearn", sklearn_checks),
                 ("pillow", pillow_checks)]:
    if not only or name in only:
        check(name, fn)
