"""A synthetic relational database in RelBench format with a known generating process.

Schema (primary keys ``0..n-1`` in time order, Δ = 30 days, ``num_windows`` windows from 2022-01-01):

* ``users(user_id, age, region)`` — static entity table; ``items(item_id, category, price, premium)`` — static,
  Zipf popularity; ``stores(store_id, size)`` — static.
* ``purchases(purchase_id, user_id → users, item_id → items, time, rating, returned)`` — the many-to-many bridge.
* ``order_lines(line_id, user_id, item_id, store_id → stores, time, quantity)`` — a 3-FK hub (6 routes).
* ``visits(visit_id, user_id, time, duration)`` — a single-FK table (dim-dim routes).
* ``posts(post_id, author_id → users, parent_id → posts, time, quality)`` — the self-FK control table.

Generating process, per window w and user u:

* active with probability ``p = σ(α_u + γ S_u(w))``; ``S_u(w)`` = mean of ``rating − 3`` over the user's purchases
  **of premium items** in windows w−2, w−1 (0 if none). Premium items are ~12 % of the catalogue, so only a
  minority of bridge rows is informative; ratings of premium items follow a persistent mood ``z_u`` (AR(1)),
  ratings of other items are uniform noise. The label therefore needs the far side of the bridge
  (``items.premium``) combined with the bridge row's own column (``purchases.rating``).
* an active user buys ``1 + Poisson(λ_u)`` items, ``λ_u = exp(0.35 · (region − 2) + 0.8 ε_u)`` (the region part
  is in the user's own row, the rest shows only through the user's past baskets in the bridge table): each a repeat
  of a past item (from the purchases before the window, well-rated ones 3× as likely) with probability 0.3, else an
  item drawn ∝ Zipf popularity × 4 for the user's preferred category (prices depend on the category, so spending
  is visible only through ``items.price``). Given the state, a basket is a compound Poisson sum of i.i.d. prices,
  so the ``user-ltv`` target has an exact law (:func:`ltv_pmf`) and an exact Bayes (conditional-median) predictor.
* 25 % of purchases also create an ``order_line`` at the user's home store; visits ~ Poisson.
* posts: users write posts; a reply's parent is drawn among the posts of the two previous windows
  ∝ ``exp(1.2 q_post + 1.2 q_parent(post))`` — a signal one self-FK hop away, which RelGNN and GraphSAGE reach
  alike (the control: expected gap ≈ 0).

Tasks (RelBench ``EntityTask`` / ``RecommendationTask``; labels from rows in ``(t, t+Δ]`` only):
``user-churn`` (binary, ROC-AUC), ``user-ltv`` (regression, MAE; Σ item price bought in the window),
``user-item-purchase`` (recommendation, MAP@10), ``post-reply`` (binary, ROC-AUC; the self-FK control).
``truth`` holds the generator's probabilities for the Bayes ceilings of the two binary tasks and the basket rates and
new-item probabilities for the exact law of ``user-ltv``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from relbench.base import Database, Dataset, EntityTask, RecommendationTask, Table, TaskType
from relbench.metrics import map as map_at_k
from relbench.metrics import roc_auc

from relgnn.errors import check_positive

T0 = pd.Timestamp("2022-01-01")
DELTA = pd.Timedelta(days=30)


def mae(true, pred) -> float:
    """Mean absolute error."""
    return float(np.mean(np.abs(np.asarray(true, dtype=float) - np.asarray(pred, dtype=float))))


@dataclass
class SyntheticDatabase:
    """What :func:`make_database` returns: the RelBench ``Database``, its ``Dataset`` (val/test cut-offs), the
    tasks by name, and the generator's ground truth."""

    db: Database
    dataset: Dataset
    tasks: dict[str, object]
    truth: dict[str, object] = field(default_factory=dict)


class SyntheticDataset(Dataset):
    """A RelBench ``Dataset`` over a fixed in-memory database."""

    def __init__(self, db: Database, *, val_timestamp: pd.Timestamp, test_timestamp: pd.Timestamp):
        self._db = db
        self.val_timestamp = val_timestamp
        self.test_timestamp = test_timestamp

    def make_db(self) -> Database:
        return Database({k: Table(df=t.df.copy(), fkey_col_to_pkey_table=dict(t.fkey_col_to_pkey_table),
                                  pkey_col=t.pkey_col, time_col=t.time_col) for k, t in self._db.table_dict.items()})


def _window(df: pd.DataFrame, col: str, lo, hi) -> pd.DataFrame:
    return df[(df[col] > lo) & (df[col] <= hi)]


class UserChurnTask(EntityTask):
    """Users who bought in (t−Δ, t]; label 1 if they buy nothing in (t, t+Δ]."""

    task_type = TaskType.BINARY_CLASSIFICATION
    entity_col, entity_table, time_col, target_col = "user_id", "users", "timestamp", "churn"
    timedelta = DELTA
    num_eval_timestamps = 2
    metrics = [roc_auc]

    def make_table(self, db: Database, timestamps) -> Table:
        p = db.table_dict["purchases"].df
        rows = []
        for t in timestamps:
            act = np.unique(_window(p, "time", t - self.timedelta, t)["user_id"].to_numpy())
            fut = set(_window(p, "time", t, t + self.timedelta)["user_id"].to_numpy().tolist())
            rows.append(pd.DataFrame({"timestamp": t, "user_id": act,
                                      "churn": [0 if u in fut else 1 for u in act]}))
        df = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["timestamp", "user_id", "churn"])
        return Table(df=df, fkey_col_to_pkey_table={"user_id": "users"}, pkey_col=None, time_col="timestamp")


class UserLTVTask(EntityTask):
    """Users who bought in (t−Δ, t]; target = Σ price of the items they buy in (t, t+Δ]."""

    task_type = TaskType.REGRESSION
    entity_col, entity_table, time_col, target_col = "user_id", "users", "timestamp", "ltv"
    timedelta = DELTA
    num_eval_timestamps = 2
    metrics = [mae]

    def make_table(self, db: Database, timestamps) -> Table:
        p = db.table_dict["purchases"].df
        price = db.table_dict["items"].df["price"].to_numpy()
        rows = []
        for t in timestamps:
            act = np.unique(_window(p, "time", t - self.timedelta, t)["user_id"].to_numpy())
            fut = _window(p, "time", t, t + self.timedelta)
            spend = pd.Series(price[fut["item_id"].to_numpy()], index=fut["user_id"].to_numpy()).groupby(level=0).sum()
            rows.append(pd.DataFrame({"timestamp": t, "user_id": act,
                                      "ltv": spend.reindex(act).fillna(0.0).to_numpy()}))
        df = pd.concat(rows, ignore_index=True)
        return Table(df=df, fkey_col_to_pkey_table={"user_id": "users"}, pkey_col=None, time_col="timestamp")


class UserItemPurchaseTask(RecommendationTask):
    """Users with a purchase up to t who buy in (t, t+Δ]; destinations = the items bought then (RelBench's
    rel-hm user-item-purchase shape; relbench allows one evaluation seed time for recommendation)."""

    task_type = TaskType.RECOMMENDATION
    src_entity_col, src_entity_table = "user_id", "users"
    dst_entity_col, dst_entity_table = "item_id", "items"
    time_col = "timestamp"
    timedelta = DELTA
    eval_k = 10
    metrics = [map_at_k]

    def make_table(self, db: Database, timestamps) -> Table:
        p = db.table_dict["purchases"].df
        rows = []
        for t in timestamps:
            act = set(p[p["time"] <= t]["user_id"].to_numpy().tolist())
            fut = _window(p, "time", t, t + self.timedelta)
            fut = fut[fut["user_id"].isin(act)]
            g = fut.groupby("user_id")["item_id"].apply(lambda s: sorted(set(s.tolist())))
            rows.append(pd.DataFrame({"timestamp": t, "user_id": g.index.to_numpy(), "item_id": g.to_list()}))
        df = pd.concat(rows, ignore_index=True)
        return Table(df=df, fkey_col_to_pkey_table={"user_id": "users", "item_id": "items"}, pkey_col=None,
                     time_col="timestamp")


class PostReplyTask(EntityTask):
    """Posts written in (t−2Δ, t]; label 1 if some post replies to them in (t, t+Δ] (the self-FK control)."""

    task_type = TaskType.BINARY_CLASSIFICATION
    entity_col, entity_table, time_col, target_col = "post_id", "posts", "timestamp", "reply"
    timedelta = DELTA
    num_eval_timestamps = 2
    metrics = [roc_auc]

    def make_table(self, db: Database, timestamps) -> Table:
        po = db.table_dict["posts"].df
        rows = []
        for t in timestamps:
            cand = _window(po, "time", t - 2 * self.timedelta, t)["post_id"].to_numpy()
            fut = _window(po, "time", t, t + self.timedelta)
            got = set(fut["parent_id"].dropna().astype(int).tolist())
            rows.append(pd.DataFrame({"timestamp": t, "post_id": cand,
                                      "reply": [1 if c in got else 0 for c in cand]}))
        df = pd.concat(rows, ignore_index=True)
        return Table(df=df, fkey_col_to_pkey_table={"post_id": "posts"}, pkey_col=None, time_col="timestamp")


TASKS = {"user-churn": UserChurnTask, "user-ltv": UserLTVTask, "user-item-purchase": UserItemPurchaseTask,
         "post-reply": PostReplyTask}


REPEAT = 0.3
"""Probability that a basket item (of a user with past purchases) is a repeat of a past item."""
BASKET_REGION = 0.35
"""Default region effect on the log basket rate (see :func:`make_database`)."""
BASKET_SIGMA = 0.8
"""Default user-level spread of the log basket rate (see :func:`make_database`)."""


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def make_database(*, num_users: int = 800, num_items: int = 200, num_stores: int = 10, num_windows: int = 24,
                  gamma: float = 2.5, basket_region: float = BASKET_REGION, basket_sigma: float = BASKET_SIGMA,
                  seed: int = 0) -> SyntheticDatabase:
    """Generate the database, its dataset (val/test at windows ``num_windows − 5`` / ``− 3``, two evaluation seed
    times each) and its tasks.

    Args:
        num_users, num_items, num_stores: table sizes (> 0).
        num_windows: number of 30-day windows (>= 9; two years = 24).
        gamma: strength of the premium-rating churn signal.
        basket_region, basket_sigma: a user's basket rate is ``λ_u = exp(basket_region · (region − 2) +
            basket_sigma · ε_u)``, ``ε_u ~ N(0, 1)``: the region part is in the user's own row (the no-relation floor
            can use it), the rest shows only through the user's past baskets in the bridge table.
        seed: generator seed (numpy).
    """
    for name, v in (("num_users", num_users), ("num_items", num_items), ("num_stores", num_stores),
                    ("num_windows", num_windows)):
        check_positive(name, v)
    if num_windows < 9:
        from relgnn.errors import ConfigError
        raise ConfigError(f"num_windows must be >= 9 (3 train windows + 2 val + 2 test + 1), got {num_windows}")
    rng = np.random.default_rng(seed)
    U, I, S, W = num_users, num_items, num_stores, num_windows
    n_cat = 8
    # --- static tables
    age = rng.integers(18, 71, U)
    region = rng.integers(0, 5, U)
    pref = rng.integers(0, n_cat, U)
    home = rng.integers(0, S, U)
    alpha = 0.4 + 0.3 * (age - 44) / 15 + rng.normal(0, 0.6, U)
    lam = np.exp(basket_region * (region - 2) + basket_sigma * rng.standard_normal(U))
    cat = rng.integers(0, n_cat, I)
    cat_price = np.exp(rng.normal(3.0, 0.6, n_cat))
    price = np.round(cat_price[cat] * rng.lognormal(0, 0.25, I), 2)
    premium = (rng.random(I) < 0.12).astype(np.int64)
    pop = 1.0 / (rng.permutation(I) + 1.0) ** 1.1
    # --- simulation
    z = rng.normal(0, 1, U)
    hist: list[list[tuple[int, int]]] = [[] for _ in range(U)]  # (item, rating)
    prem_r = np.zeros((W, U))
    prem_n = np.zeros((W, U))
    p_active = np.zeros((W, U))
    P, OL, V = [], [], []
    for w in range(W):
        lo = T0 + w * DELTA
        z = 0.8 * z + rng.normal(0, 0.6, U)
        n2 = prem_n[max(w - 2, 0):w].sum(0) if w else np.zeros(U)
        s = np.where(n2 > 0, prem_r[max(w - 2, 0):w].sum(0) / np.maximum(n2, 1) - 3.0, 0.0) if w else np.zeros(U)
        p = _sig(alpha + gamma * s)
        p_active[w] = p
        active = rng.random(U) < p
        for u in np.nonzero(active)[0]:
            n = 1 + rng.poisson(lam[u])
            pool = hist[u][:]  # repeats come from the purchases before this window (so a basket is i.i.d. draws)
            for _ in range(n):
                if pool and rng.random() < REPEAT:
                    its = np.array([h[0] for h in pool])
                    wts = np.array([3.0 if h[1] >= 4 else 1.0 for h in pool])
                    it = int(its[rng.choice(len(its), p=wts / wts.sum())])
                else:
                    wts = pop * np.where(cat == pref[u], 4.0, 1.0)
                    it = int(rng.choice(I, p=wts / wts.sum()))
                if premium[it]:
                    r = int(np.clip(np.round(3 + 1.5 * z[u] + rng.normal(0, 0.7)), 1, 5))
                    prem_r[w, u] += r
                    prem_n[w, u] += 1
                else:
                    r = int(rng.integers(1, 6))
                hist[u].append((it, r))
                t = lo + pd.Timedelta(seconds=int(rng.integers(1, DELTA.total_seconds())))
                P.append((u, it, t, r, int(rng.random() < 0.05)))
                if rng.random() < 0.25:
                    OL.append((u, it, int(home[u]), t, 1 + int(rng.poisson(0.5))))
        nv = rng.poisson(0.1 + 0.4 * active)
        for u in np.nonzero(nv)[0]:
            for _ in range(nv[u]):
                t = lo + pd.Timedelta(seconds=int(rng.integers(1, DELTA.total_seconds())))
                V.append((u, t, float(np.round(rng.exponential(10.0), 2))))
    # --- posts (self-FK control); exact reply probabilities recorded for the ceiling
    post_time, post_author, post_parent, post_q, post_win = [], [], [], [], []
    reply_prob: dict[tuple[int, int], float] = {}
    for w in range(W):
        lo = T0 + w * DELTA
        cand = [i for i in range(len(post_time)) if w - 2 <= post_win[i] < w]
        n_new = rng.poisson(0.3 * U)
        n_reply = rng.binomial(n_new, 0.6) if cand else 0
        if cand:
            qp = np.array([post_q[i] + (post_q[post_parent[i]] if post_parent[i] >= 0 else 0.0) for i in cand])
            pi = np.exp(1.2 * qp)
            pi /= pi.sum()
            for c, pc in zip(cand, pi):
                reply_prob[(c, w)] = 1.0 - (1.0 - pc) ** n_reply
        times = sorted(lo + pd.Timedelta(seconds=int(x)) for x in rng.integers(1, DELTA.total_seconds(), n_new))
        is_reply = np.zeros(n_new, bool)
        is_reply[rng.permutation(n_new)[:n_reply]] = True
        for k in range(n_new):
            par = int(rng.choice(cand, p=pi)) if is_reply[k] else -1
            post_time.append(times[k])
            post_author.append(int(rng.integers(0, U)))
            post_parent.append(par)
            post_q.append(float(rng.normal()))
            post_win.append(w)
    # --- tables (rows sorted by time, keys 0..n-1)
    pdf = pd.DataFrame(P, columns=["user_id", "item_id", "time", "rating", "returned"]).sort_values("time", kind="stable")
    pdf.insert(0, "purchase_id", np.arange(len(pdf)))
    odf = pd.DataFrame(OL, columns=["user_id", "item_id", "store_id", "time", "quantity"]).sort_values("time", kind="stable")
    odf.insert(0, "line_id", np.arange(len(odf)))
    vdf = pd.DataFrame(V, columns=["user_id", "time", "duration"]).sort_values("time", kind="stable")
    vdf.insert(0, "visit_id", np.arange(len(vdf)))
    posts = pd.DataFrame({"post_id": np.arange(len(post_time)), "author_id": post_author,
                          "parent_id": pd.array([p if p >= 0 else None for p in post_parent], dtype="Int64"),
                          "time": pd.to_datetime(post_time), "quality": np.round(post_q, 3)})
    tables = {
        "users": Table(pd.DataFrame({"user_id": np.arange(U), "age": age, "region": [f"r{r}" for r in region]}),
                       {}, "user_id", None),
        "items": Table(pd.DataFrame({"item_id": np.arange(I), "category": [f"c{c}" for c in cat], "price": price,
                                     "premium": premium}), {}, "item_id", None),
        "stores": Table(pd.DataFrame({"store_id": np.arange(S), "size": rng.integers(1, 5, S)}), {}, "store_id", None),
        "purchases": Table(pdf.reset_index(drop=True), {"user_id": "users", "item_id": "items"}, "purchase_id", "time"),
        "order_lines": Table(odf.reset_index(drop=True), {"user_id": "users", "item_id": "items", "store_id": "stores"},
                             "line_id", "time"),
        "visits": Table(vdf.reset_index(drop=True), {"user_id": "users"}, "visit_id", "time"),
        "posts": Table(posts, {"author_id": "users", "parent_id": "posts"}, "post_id", "time"),
    }
    db = Database(tables)
    dataset = SyntheticDataset(db, val_timestamp=T0 + (W - 5) * DELTA, test_timestamp=T0 + (W - 3) * DELTA)
    tasks = {name: cls(dataset) for name, cls in TASKS.items()}
    w_new = pop[None, :] * np.where(cat[None, :] == pref[:, None], 4.0, 1.0)  # (U, I) new-item draw weights
    truth = {"p_active": p_active, "reply_prob": reply_prob, "post_window": np.array(post_win),
             "basket_rate": lam, "new_item_prob": w_new / w_new.sum(1, keepdims=True)}
    return SyntheticDatabase(db=db, dataset=dataset, tasks=tasks, truth=truth)


def ltv_pmf(sdb: SyntheticDatabase, user: int, window: int, *, basket_rate: float | None = None) -> np.ndarray:
    """The generator's exact law of ``user``'s spend in ``window`` (the ``user-ltv`` target of the seed time at the
    window's start), as a probability mass over integer cents.

    Given the generator's state, the target is ``Y = A · Σ_{k=1}^{N} X_k`` with ``A ~ Bernoulli(p_active[w, u])``,
    ``N = 1 + Poisson(λ_u)`` and ``X_k`` i.i.d. item prices (in cents) drawn from ``q = 0.3 · (the user's past
    items, weight 3 if rated >= 4 else 1) + 0.7 · (the new-item draw)`` (``q`` = the new-item draw for a user with no
    past purchase). A compound Poisson sum has the characteristic function ``φ_S(ω) = φ_X(ω) · exp(λ (φ_X(ω) − 1))``,
    so its mass on the integer cents is one inverse FFT of length M, a power of 2 above ``n_max · max price`` where
    ``P(N > n_max) < 1e-13`` (no wrap-around at that precision). ``basket_rate`` overrides ``λ_u`` (tests).
    """
    from scipy.stats import poisson

    db = sdb.db.table_dict
    cents = np.round(db["items"].df["price"].to_numpy() * 100).astype(np.int64)
    pur = db["purchases"].df
    past = pur[(pur["user_id"] == user) & (pur["time"] <= T0 + window * DELTA)]
    q = sdb.truth["new_item_prob"][user].copy()
    if len(past):
        hw = np.where(past["rating"].to_numpy() >= 4, 3.0, 1.0)
        rep = np.bincount(past["item_id"].to_numpy(), weights=hw, minlength=len(q))
        q = REPEAT * rep / hw.sum() + (1.0 - REPEAT) * q
    lam = float(sdb.truth["basket_rate"][user] if basket_rate is None else basket_rate)
    n_max = 1 + int(poisson.isf(1e-13, lam))
    m = 1 << int(np.ceil(np.log2(n_max * cents.max() + 1)))
    fx = np.fft.rfft(np.bincount(cents, weights=q, minlength=m))
    ps = np.clip(np.fft.irfft(fx * np.exp(lam * (fx - 1.0)), m), 0.0, None)
    p_act = float(sdb.truth["p_active"][window, user])
    ps *= p_act / ps.sum()
    ps[0] += 1.0 - p_act
    return ps


def ltv_law(sdb: SyntheticDatabase, table: Table) -> tuple[np.ndarray, np.ndarray]:
    """Per ``user-ltv`` row of ``table``, in cents: the conditional median of the target under the generator's exact
    law (:func:`ltv_pmf`), which is the MAE-optimal (Bayes) prediction, and its expected absolute error
    ``E|Y − median|`` (the row's Bayes MAE)."""
    df = table.df
    w = ((df["timestamp"] - T0) / DELTA).round().astype(int).to_numpy()
    med, dev = np.zeros(len(df)), np.zeros(len(df))
    for i, (u, wi) in enumerate(zip(df["user_id"].to_numpy(), w)):
        ps = ltv_pmf(sdb, int(u), int(wi))
        k = int(np.searchsorted(np.cumsum(ps), 0.5))
        med[i], dev[i] = k, float(np.sum(ps * np.abs(np.arange(len(ps)) - k)))
    return med, dev


def bayes_scores(sdb: SyntheticDatabase, task_name: str, table: Table) -> np.ndarray | None:
    """The generator's Bayes-optimal prediction for each row of ``table``: the probability of a positive label
    (binary tasks), the conditional median of the spend for ``user-ltv`` (the MAE-optimal prediction, from its exact
    law, :func:`ltv_law`), else None."""
    df = table.df
    w = ((df["timestamp"] - T0) / DELTA).round().astype(int).to_numpy()
    if task_name == "user-churn":
        return 1.0 - sdb.truth["p_active"][w, df["user_id"].to_numpy()]
    if task_name == "user-ltv":
        return ltv_law(sdb, table)[0] / 100.0
    if task_name == "post-reply":
        rp = sdb.truth["reply_prob"]
        return np.array([rp.get((int(p), int(k)), 0.0) for p, k in zip(df["post_id"], w)])
    return None


def clone(sdb: SyntheticDatabase) -> SyntheticDatabase:
    """A deep copy (tables can be mutated in tests)."""
    return copy.deepcopy(sdb)
