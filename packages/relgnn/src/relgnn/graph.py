"""RelBench database -> heterogeneous graph, and leak-free time snapshots of it.

Follows RelBench's ``make_pkey_fkey_graph``: one node type per table, one node per row, one edge type per foreign key
``(F, "f2p_<fk>", D)`` plus its reverse ``(D, "rev_f2p_<fk>", F)``. ``data[T].time`` holds unix seconds of the
table's time column.

**Primary-key re-keying.** Primary keys need not be ``0..n-1``: like RelBench's ``reindex_pkeys_and_fkeys`` a
table whose keys are anything else (strings, gaps, any order, shuffled rows) is re-keyed to its row positions,
foreign keys are mapped through the same key map, and ``RelGraph.key_maps`` keeps the original keys so task tables
(entity ids, destination lists) map too (:meth:`RelGraph.to_rows` / :meth:`RelGraph.to_keys`). A null foreign key
means "no parent" (no edge, no message). A non-null foreign key that is not a key of its parent table is
**dangling**: ``dangling_fk="drop"`` (default) drops its edge with a :class:`DanglingForeignKeyWarning` naming the
table, the column, the count and an example value (RelBench's reindexing maps such keys to null and its graph
builder then drops them silently; we keep its behaviour so RelBench databases load, but say so);
``dangling_fk="error"`` raises :class:`SchemaError` instead.

**Features.** A plain encoding instead of torch-frame's (``encoder="torch-frame"`` re-encodes these columns):
numeric/bool columns standardised with the mean and sd of their finite fitting values, datetime columns as
standardised days, everything else categorical codes (0 = missing / rare; the vocabulary is ordered by count, ties
by value, so it does not depend on row order). **Missing values** (NaN / None / NaT) are imputed with the fitting
mean (0 after standardisation; torch-frame's default ``NAStrategy.MEAN`` for numerical columns). **Infinite
values** raise :class:`SchemaError` naming the table and column (``nonfinite="error"``, the default: an ``inf`` is
usually a bug upstream, e.g. a division by zero, and imputing it silently would hide it) or are treated as missing
with ``nonfinite="missing"``. A table without feature columns gets the constant column ``__const__``.

``snapshot(graph, t)`` keeps only rows with ``time <= t`` (static tables whole) and the edges between kept rows:
message passing on it cannot see anything later than ``t`` (the per-timestamp full-graph training of the paper
note, used instead of PyG's ``NeighborLoader`` which needs pyg-lib / torch-sparse).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch_geometric.data import HeteroData

from relgnn.errors import SchemaError

STYPES = ("numerical", "categorical", "timestamp", "text_embedded", "text_tokenized", "multicategorical",
          "embedding", "sequence_numerical")
"""torch-frame's semantic types (``torch_frame.stype`` values) that a column may be given."""
DANGLING_FK = ("drop", "error")
NONFINITE = ("error", "missing")


class DanglingForeignKeyWarning(UserWarning):
    """Non-null foreign keys that are not keys of their parent table were dropped (``dangling_fk="drop"``)."""


@dataclass
class TableSpec:
    """Feature layout of one table: numeric column names, categorical columns and their cardinalities."""

    num_cols: list[str]
    cat_cols: list[str]
    cat_cards: list[int]
    has_time: bool
    stypes: dict[str, str] = field(default_factory=dict)
    """The torch-frame semantic type each feature column was encoded as (inferred or given)."""


@dataclass
class RelGraph:
    """The full graph of a database: ``data`` (HeteroData with ``x_num`` (N, d_num) float, ``x_cat`` (N, d_cat)
    long, ``time`` (N,) int64 seconds for timed tables) and the per-table feature specs."""

    data: HeteroData
    specs: dict[str, TableSpec]
    edge_types: list[tuple[str, str, str]]
    cache: dict = field(default_factory=dict, repr=False)
    key_maps: dict[str, pd.Index] = field(default_factory=dict)
    """Original primary keys (row position -> key) of every re-keyed table; tables keyed 0..n-1 are absent."""

    @property
    def node_types(self) -> list[str]:
        return list(self.specs)

    def num_nodes(self, table: str) -> int:
        return int(self.data[table].num_nodes)

    def to_rows(self, table: str, keys) -> np.ndarray:
        """Row positions of primary-key values ``keys`` of ``table`` (-1 for a key that is not in the table)."""
        keys = np.asarray(keys)
        if table in self.key_maps:
            return self.key_maps[table].get_indexer(keys).astype(np.int64)
        k = pd.to_numeric(pd.Series(keys), errors="coerce").to_numpy(dtype="float64")
        ok = np.isfinite(k) & (k >= 0) & (k < self.num_nodes(table)) & (k == np.round(k))
        return np.where(ok, np.nan_to_num(k), -1).astype(np.int64)

    def to_keys(self, table: str, rows) -> np.ndarray:
        """Primary-key values of row positions ``rows`` of ``table`` (the inverse of :meth:`to_rows`)."""
        rows = np.asarray(rows)
        return self.key_maps[table].to_numpy()[rows] if table in self.key_maps else rows


def validate_database(db) -> None:
    """Check the RelBench key contract and the schema; raise :class:`SchemaError` naming the table/column.

    Checks: primary keys present, unique and without missing values; every FK column present and pointing to a
    known table that has a primary key; time columns present and of datetime dtype; at least one FK overall.
    """
    tables = getattr(db, "table_dict", None)
    if not isinstance(tables, dict) or not tables:
        raise SchemaError("db must be a relbench Database with a non-empty table_dict")
    n_fk = 0
    for name, t in tables.items():
        df = t.df
        if t.pkey_col is not None:
            if t.pkey_col not in df.columns:
                raise SchemaError(f"table {name!r}: primary key column {t.pkey_col!r} is missing from the dataframe")
            pk = df[t.pkey_col]
            if pk.isna().any():
                raise SchemaError(f"table {name!r}: primary key {t.pkey_col!r} has missing values")
            if pk.duplicated().any():
                raise SchemaError(f"table {name!r}: primary key {t.pkey_col!r} contains duplicated elements")
        if t.time_col is not None:
            if t.time_col not in df.columns:
                raise SchemaError(f"table {name!r}: time column {t.time_col!r} is missing from the dataframe")
            if not pd.api.types.is_datetime64_any_dtype(df[t.time_col]):
                raise SchemaError(
                    f"table {name!r}: time column {t.time_col!r} must have a datetime64 dtype, got {df[t.time_col].dtype}")
        for fk, parent in t.fkey_col_to_pkey_table.items():
            if parent not in tables:
                raise SchemaError(
                    f"table {name!r}: foreign key {fk!r} points to unknown table {parent!r} (known: {sorted(tables)})")
            if tables[parent].pkey_col is None:
                raise SchemaError(f"table {name!r}: foreign key {fk!r} points to {parent!r}, which has no primary key")
            if fk not in df.columns:
                raise SchemaError(f"table {name!r}: foreign key column {fk!r} is missing from the dataframe")
            n_fk += 1
    if n_fk == 0:
        raise SchemaError("the database has no foreign keys: there is no relation to pass messages along")


def _to_seconds(ser: pd.Series) -> np.ndarray:
    ser = pd.to_datetime(ser)
    if getattr(ser.dt, "tz", None) is not None:
        ser = ser.dt.tz_convert(None)
    return ser.to_numpy().astype("datetime64[s]").astype(np.int64)


def to_seconds(ts) -> int:
    """A pandas timestamp as unix seconds."""
    return int(pd.Timestamp(ts).value // 10**9)


def _embed_text(name: str, col: str, ser: pd.Series, fit_rows: np.ndarray, embed) -> tuple[list[str], list]:
    """A text column as standardised embedding columns ``col[0..d-1]`` (statistics on the fitting rows)."""
    texts = ["" if x is None or (isinstance(x, float) and np.isnan(x)) else str(x) for x in ser]
    e = np.asarray(embed(texts), dtype=np.float64)
    if e.ndim != 2 or e.shape[0] != len(texts) or not np.isfinite(e).all():
        raise SchemaError(f"table {name!r}, text column {col!r}: the text embedder must return a finite "
                          f"({len(texts)}, d) array, got shape {e.shape}")
    f = e[fit_rows] if len(fit_rows) else e
    mu, sd = f.mean(0), f.std(0)
    sd = np.where(sd > 1e-12, sd, 1.0)
    z = (e - mu) / sd
    return [f"{col}[{j}]" for j in range(e.shape[1])], [z[:, j] for j in range(e.shape[1])]


def infer_stypes(db, *, sample: int = 1000, seed: int = 0) -> dict[str, dict[str, str]]:
    """torch-frame's semantic-type inference for every feature column (``{table: {column: stype value}}``).

    The same rule as RelBench's ``get_stype_proposal`` (``torch_frame.utils.infer_series_stype`` on a sample of at
    most ``sample`` rows per table), with a seeded sample so that the proposal does not change from call to call, and
    key and time columns left out. A column torch-frame cannot type (e.g. all missing) is absent: it falls back to the
    dtype rule (numbers numerical, datetimes timestamps, everything else categorical).
    """
    from torch_frame.utils.infer_stype import infer_series_stype

    out: dict[str, dict[str, str]] = {}
    for name, t in db.table_dict.items():
        keys = {t.pkey_col, t.time_col, *t.fkey_col_to_pkey_table}
        df = t.df
        df = df.sample(min(sample, len(df)), random_state=seed) if len(df) > sample else df
        got = {}
        for col in df.columns:
            if col in keys or len(df) == 0:
                continue
            try:
                st = infer_series_stype(df[col])
            except Exception:  # noqa: BLE001 - torch-frame's inference raises on unusual dtypes; fall back
                st = None
            if st is not None:
                got[col] = st.value
        out[name] = got
    return out


def _dtype_stype(ser: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(ser) or pd.api.types.is_numeric_dtype(ser):
        return "numerical"
    if pd.api.types.is_datetime64_any_dtype(ser):
        return "timestamp"
    return "categorical"


def _encode_table(name, t, fit_df, text_cols=(), embed=None, nonfinite: str = "error", stypes=None
                  ) -> tuple[np.ndarray, np.ndarray, TableSpec]:
    df = t.df
    keys = {t.pkey_col, t.time_col, *t.fkey_col_to_pkey_table}
    num_cols, cat_cols, cat_cards, nums, cats = [], [], [], [], []
    used: dict[str, str] = {}
    stypes = stypes or {}
    for col in df.columns:
        if col in keys:
            continue
        if col in text_cols:
            names, cols = _embed_text(name, col, df[col], df.index.get_indexer(fit_df.index), embed)
            num_cols += names
            nums += cols
            used[col] = "text_embedded"
            continue
        ser, fit = df[col], fit_df[col]
        st = stypes.get(col) or _dtype_stype(ser)
        if st == "numerical" and not (pd.api.types.is_bool_dtype(ser) or pd.api.types.is_numeric_dtype(ser)):
            ser, fit = pd.to_numeric(ser, errors="coerce"), pd.to_numeric(fit, errors="coerce")
        if st == "timestamp" and not pd.api.types.is_datetime64_any_dtype(ser):
            ser, fit = pd.to_datetime(ser, errors="coerce"), pd.to_datetime(fit, errors="coerce")
        if st not in ("numerical", "timestamp"):
            # categorical; text / list-valued columns without an embedder too (as strings, one category each)
            st = "categorical"
        used[col] = st
        if st == "numerical":
            v = ser.astype("float64").to_numpy()
            f = fit.astype("float64").to_numpy()
            inf = np.isinf(v)
            if inf.any() and nonfinite == "error":
                key = t.df[t.pkey_col].to_numpy()[inf][0] if t.pkey_col is not None else int(np.nonzero(inf)[0][0])
                key = key.item() if isinstance(key, np.generic) else key
                raise SchemaError(f"table {name!r}, column {col!r}: {int(inf.sum())} infinite value(s) (first at "
                                  f"key {key!r}); fix them upstream or pass nonfinite='missing' (--nonfinite missing) "
                                  f"to impute them like missing values")
        elif st == "timestamp":
            v = _to_seconds(ser.fillna(pd.Timestamp(0))) / 86400.0
            v[ser.isna().to_numpy()] = np.nan
            f = _to_seconds(fit.fillna(pd.Timestamp(0))) / 86400.0
            f[fit.isna().to_numpy()] = np.nan
        else:
            s = ser.map(lambda x: None if x is None or (isinstance(x, float) and np.isnan(x)) else str(x))
            counts = fit.dropna().astype(str).value_counts()
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))  # ties by value: row-order free
            vocab = {c: i + 1 for i, (c, _) in enumerate(ranked)}  # no cap: torch-frame's vocabulary has none
            cats.append(np.array([vocab.get(x, 0) if x is not None else 0 for x in s], dtype=np.int64))
            cat_cols.append(col)
            cat_cards.append(len(vocab) + 1)
            continue
        f = np.where(np.isinf(f), np.nan, f)  # statistics of the finite fitting values (inf only with "missing")
        mu = np.nanmean(f) if np.isfinite(f).any() else 0.0
        sd = np.nanstd(f) if np.isfinite(f).any() else 1.0
        sd = sd if sd > 1e-12 else 1.0
        v = np.where(np.isfinite(v), (v - mu) / sd, 0.0)  # mean imputation (0 after standardisation)
        nums.append(v)
        num_cols.append(col)
    if not num_cols and not cat_cols:
        nums.append(np.ones(len(df)))
        num_cols.append("__const__")
    x_num = np.stack(nums, 1) if nums else np.zeros((len(df), 0))
    x_cat = np.stack(cats, 1) if cats else np.zeros((len(df), 0), dtype=np.int64)
    if "__const__" in num_cols:
        used["__const__"] = "numerical"
    return x_num, x_cat, TableSpec(num_cols, cat_cols, cat_cards, t.time_col is not None, used)


def _is_row_keyed(pk: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(pk) and np.array_equal(pk.to_numpy(), np.arange(len(pk)))


def rekey(db) -> tuple[dict[str, pd.DataFrame], dict[str, pd.Index], dict[tuple[str, str], tuple[int, object]]]:
    """Dataframes whose primary keys are row positions ``0..n-1`` and whose foreign keys point to row positions.

    Returns ``(frames, key_maps, dangling)``: ``key_maps[table]`` holds the original keys (only tables that needed
    it); a non-null foreign key whose value is not a key of its parent becomes ``<NA>`` and is counted in
    ``dangling[(table, fk)] = (count, first value)`` (foreign keys into row-keyed tables are checked by
    :func:`build_graph`).
    """
    tables = db.table_dict
    key_maps = {name: pd.Index(t.df[t.pkey_col].to_numpy()) for name, t in tables.items()
                if t.pkey_col is not None and not _is_row_keyed(t.df[t.pkey_col])}
    frames, dangling = {}, {}
    for name, t in tables.items():
        touched = ({t.pkey_col} if name in key_maps else set()) | {
            fk for fk, parent in t.fkey_col_to_pkey_table.items() if parent in key_maps}
        if not touched:
            frames[name] = t.df
            continue
        df = t.df.copy()
        if name in key_maps:
            df[t.pkey_col] = np.arange(len(df))
        for fk, parent in t.fkey_col_to_pkey_table.items():
            if parent in key_maps:
                vals = t.df[fk].to_numpy()
                pos = key_maps[parent].get_indexer(vals)
                bad = (pos < 0) & t.df[fk].notna().to_numpy()
                if bad.any():
                    ex = vals[bad][0]
                    dangling[(name, fk)] = (int(bad.sum()), ex.item() if isinstance(ex, np.generic) else ex)
                df[fk] = pd.array(np.where(pos >= 0, pos, 0), dtype="Int64")
                df.loc[pos < 0, fk] = pd.NA
        frames[name] = df
    return frames, key_maps, dangling


def _report_dangling(dangling: dict, tables, policy: str) -> None:
    if not dangling:
        return
    lines = [f"table {t!r}, foreign key {fk!r} -> {tables[t].fkey_col_to_pkey_table[fk]!r}: {n} row(s) point to no "
             f"row of the parent (e.g. {ex!r})" for (t, fk), (n, ex) in dangling.items()]
    if policy == "error":
        raise SchemaError("dangling foreign keys (dangling_fk='error'): " + "; ".join(lines))
    warnings.warn("dangling foreign keys dropped (no edge; RelBench drops them too): " + "; ".join(lines),
                  DanglingForeignKeyWarning, stacklevel=3)


def build_graph(db, *, fit_until=None, text_columns: dict[str, list[str]] | None = None,
                text_embedder=None, dangling_fk: str = "drop", nonfinite: str = "error",
                col_to_stype: dict[str, dict[str, str]] | None = None) -> RelGraph:
    """Build the full :class:`RelGraph` of a RelBench ``Database``.

    Args:
        db: the database (usually ``task.get_db()``, i.e. cut at the test timestamp).
        fit_until: if given, feature statistics (mean/sd, vocabularies) are fitted on rows up to this time only;
            default: on the whole ``db`` (RelBench practice).
        text_columns: ``{table: [column, ...]}`` encoded by ``text_embedder`` (RelBench's ``text_embedded`` stype)
            instead of as categories: each becomes ``d`` standardised numeric columns ``column[j]``.
        text_embedder: ``texts -> (n, d) array``, e.g. :func:`relgnn.text.sentence_transformer_embedder` on a
            local sentence-transformers model folder (nothing is downloaded).
        dangling_fk: ``"drop"`` (default: a non-null foreign key that is not a key of its parent loses its edge,
            with a :class:`DanglingForeignKeyWarning` naming table and column) or ``"error"`` (:class:`SchemaError`).
        nonfinite: ``"error"`` (default: an infinite numeric value raises :class:`SchemaError` naming table and
            column) or ``"missing"`` (imputed like NaN, with the fitting mean).
        col_to_stype: ``{table: {column: stype}}`` (torch-frame ``stype`` or its value) overriding the inferred
            semantic types (default: :func:`infer_stypes`, torch-frame's inference as RelBench's
            ``get_stype_proposal``). numerical -> standardised, timestamp -> standardised days, categorical ->
            codes by count (no cap); text / list columns without a ``text_embedder`` are encoded as categories.
    """
    if dangling_fk not in DANGLING_FK:
        raise SchemaError(f"dangling_fk must be one of {DANGLING_FK}, got {dangling_fk!r}")
    if nonfinite not in NONFINITE:
        raise SchemaError(f"nonfinite must be one of {NONFINITE}, got {nonfinite!r}")
    validate_database(db)
    text_columns = {k: list(v) for k, v in (text_columns or {}).items()}
    if text_columns and text_embedder is None:
        raise SchemaError("text_columns needs a text_embedder (e.g. relgnn.text.sentence_transformer_embedder(path))")
    for tname, cols in text_columns.items():
        if tname not in db.table_dict:
            raise SchemaError(f"text_columns: no table {tname!r} (tables: {sorted(db.table_dict)})")
        t = db.table_dict[tname]
        bad = [c for c in cols if c not in t.df.columns or c in {t.pkey_col, t.time_col, *t.fkey_col_to_pkey_table}]
        if bad:
            raise SchemaError(f"text_columns[{tname!r}]: {bad} are not feature columns of the table")
    stypes = infer_stypes(db)
    for tname, cols in (col_to_stype or {}).items():
        if tname not in db.table_dict:
            raise SchemaError(f"col_to_stype: no table {tname!r} (tables: {sorted(db.table_dict)})")
        for c, st in cols.items():
            v = getattr(st, "value", st)
            if v not in STYPES:
                raise SchemaError(f"col_to_stype[{tname!r}][{c!r}] must be one of {STYPES}, got {st!r}")
            if c not in db.table_dict[tname].df.columns:
                raise SchemaError(f"col_to_stype[{tname!r}]: no column {c!r} in the table")
            stypes[tname][c] = v
    frames, key_maps, dangling = rekey(db)
    from relbench.base import Database, Table

    tables_in = db.table_dict

    db = Database({n: Table(frames[n], dict(t.fkey_col_to_pkey_table), t.pkey_col, t.time_col)
                   for n, t in db.table_dict.items()})
    data = HeteroData()
    specs: dict[str, TableSpec] = {}
    for name, t in db.table_dict.items():
        fit_df = t.df if fit_until is None or t.time_col is None else t.df[t.df[t.time_col] <= pd.Timestamp(fit_until)]
        if len(fit_df) == 0:
            fit_df = t.df
        x_num, x_cat, spec = _encode_table(name, t, fit_df, set(text_columns.get(name, ())), text_embedder,
                                           nonfinite, stypes.get(name))
        data[name].x_num = torch.tensor(x_num, dtype=torch.float32)
        data[name].x_cat = torch.tensor(x_cat, dtype=torch.long)
        data[name].num_nodes = len(t.df)
        data[name].n_id = torch.arange(len(t.df))
        if t.time_col is not None:
            data[name].time = torch.tensor(_to_seconds(t.df[t.time_col]), dtype=torch.long)
        specs[name] = spec
    edge_types = []
    for name, t in db.table_dict.items():
        for fk, parent in t.fkey_col_to_pkey_table.items():
            fkv = pd.to_numeric(t.df[fk], errors="coerce").to_numpy(dtype="float64")
            n_par = len(db.table_dict[parent].df)
            ok = np.isfinite(fkv) & (fkv >= 0) & (fkv < n_par) & (fkv == np.round(fkv))
            bad = ~ok & t.df[fk].notna().to_numpy()
            if bad.any() and (name, fk) not in dangling:
                ex = t.df[fk].to_numpy()[bad][0]
                dangling[(name, fk)] = (int(bad.sum()), ex.item() if isinstance(ex, np.generic) else ex)
            src = np.nonzero(ok)[0]
            dst = fkv[ok].astype(np.int64)
            ei = torch.tensor(np.stack([src, dst]), dtype=torch.long)
            perm = torch.argsort(ei[1] * max(len(t.df), 1) + ei[0])
            data[name, f"f2p_{fk}", parent].edge_index = ei
            data[parent, f"rev_f2p_{fk}", name].edge_index = ei.flip(0)[:, perm]
            edge_types += [(name, f"f2p_{fk}", parent), (parent, f"rev_f2p_{fk}", name)]
    _report_dangling(dangling, tables_in, dangling_fk)
    return RelGraph(data=data, specs=specs, edge_types=edge_types, key_maps=key_maps)


def snapshot(graph: RelGraph, t_seconds: int, *, cache: bool = True) -> HeteroData:
    """The sub-graph visible at seed time ``t``: rows with ``time <= t`` (all rows of static tables) and the edges
    among them. Nodes are re-indexed; ``n_id`` maps back to row ids. ``seed_time`` is set on every node type."""
    key = ("snap", int(t_seconds))
    if cache and key in graph.cache:
        return graph.cache[key]
    full = graph.data
    out = HeteroData()
    keep, inv = {}, {}
    for nt in graph.node_types:
        st = full[nt]
        n = st.num_nodes
        mask = st.time <= t_seconds if "time" in st else torch.ones(n, dtype=torch.bool)
        idx = mask.nonzero().flatten()
        keep[nt] = idx
        m = torch.full((n,), -1, dtype=torch.long)
        m[idx] = torch.arange(idx.numel())
        inv[nt] = m
        out[nt].x_num = st.x_num[idx]
        out[nt].x_cat = st.x_cat[idx]
        out[nt].n_id = idx
        out[nt].num_nodes = idx.numel()
        if "time" in st:
            out[nt].time = st.time[idx]
        out[nt].seed_time = torch.full((idx.numel(),), int(t_seconds), dtype=torch.long)
    for et in graph.edge_types:
        s, _, d = et
        ei = full[et].edge_index
        a, b = inv[s][ei[0]], inv[d][ei[1]]
        ok = (a >= 0) & (b >= 0)
        out[et].edge_index = torch.stack([a[ok], b[ok]])
    out.inv = inv
    if cache:
        graph.cache[key] = out
    return out
