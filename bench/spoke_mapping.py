"""Benchmark: the CUI mapping against a SPOKE-sized Neo4j, by lookup (litpath) and by the scan it
replaces, same server, same files, same run.

    flock /tmp/litpath-heavy.lock .venv/bin/python bench/spoke_mapping.py                  # 1M Protein nodes
    .venv/bin/python bench/spoke_mapping.py --proteins 50000 --repeat 1                        # quick check

SPOKE is not distributed as a dump: a researcher maps against SPOKE's own server, where one label
holds tens of millions of nodes (39M Protein nodes on today's SPOKE). The benchmark writes a
synthetic SPOKE by plain Cypher, in today's conventions (integer Gene and Organism identifiers,
``inchikey:`` Compounds with ``xrefs`` lists, some stored as text, obsolete ``vestige`` nodes,
uniqueness constraints on ``identifier``), with ``--proteins`` Protein nodes and the other 12
mappable labels in today's SPOKE's proportions to Protein where that leaves them thousands strong,
and the cross-reference files in their real layouts at realistic sizes (NCIt-SwissProt 20k
accessions, gene_info 20k genes, a MRCONSO of ``--mrconso-rows`` lines). Its own Neo4j
(``services.local.servers.Neo4jServer``, data under ``--workdir``; JVM options from
``LITPATH_NEO4J_JAVA_OPTS``, default ``-Xmx2g``) then holds it, and each variant runs ``--repeat``
times, alternating, each in a child process (its peak RSS is litpath's memory):

* **lookup** -- ``build_mapping_by_lookup`` over ``Neo4jNodes``: only the identifiers a route can
  use, in batched ``UNWIND`` queries on the identifier index;
* **scan** -- ``build_mapping`` over ``spoke_nodes_from_neo4j``: every node of the 13 labels
  streamed into Python, what litpath did before.

Both must give the same table (checked). Medians of seconds, peak RSS and the ratio go to
``bench/results/spoke_mapping.md`` with the CPU model. Targets (issue 26): the lookup at 1M
Protein nodes within 2 minutes and 1 GiB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "spoke_mapping.md"
TARGET_SECONDS, TARGET_BYTES = 120.0, 1 << 30
# Today's SPOKE (public notes on the live server, 2026): nodes per label against 39,442,384 Proteins.
SPOKE_COUNTS = {
    "Protein": 39_442_384, "Compound": 3_129_786, "Organism": 356_647, "Gene": 20_824, "Disease": 12_243,
    "Anatomy": 16_067, "BiologicalProcess": 13_653, "MolecularFunction": 3_998, "CellularComponent": 1_894,
    "SideEffect": 5_964, "Symptom": 1_960, "PharmacologicClass": 635, "CellType": 2_754,
}  # fmt: skip
FLOOR = 2_000  # a label is never smaller than this in the benchmark (or than SPOKE's own count)


def cpu_model() -> str:
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return platform.processor() or "unknown CPU"


def label_sizes(proteins: int) -> dict[str, int]:
    scale = proteins / SPOKE_COUNTS["Protein"]
    return {
        label: proteins if label == "Protein" else min(count, max(FLOOR, round(count * scale)))
        for label, count in SPOKE_COUNTS.items()
    }


# ------------------------------------------------------------------------------------- the data


class World:
    """The synthetic SPOKE's nodes (generated lazily, label by label) and the files."""

    def __init__(self, proteins: int, mrconso_rows: int, seed: int):
        self.sizes = label_sizes(proteins)
        self.mrconso_rows = mrconso_rows
        self.seed = seed

    def nodes(self, label: str):
        """(identifier, properties) of each node of a label, deterministic."""
        rng = random.Random(f"{self.seed}-{label}")
        n = self.sizes[label]
        for i in range(n):
            obsolete = rng.random() < 0.01
            props: dict = {"name": f"{label.lower()} {i}"}
            if obsolete:
                props["vestige"] = True if rng.random() < 0.5 else "True"
            if label == "Protein":
                yield f"A{i:07d}", {**props, "org_ncbi_id": rng.randrange(1, 10**6), "reviewed": i % 50 == 0}
            elif label == "Gene":
                yield 1 + i * 3, props  # an integer, as SPOKE stores Entrez ids
            elif label == "Organism":
                yield 10 + i * 7, props
            elif label == "Compound":
                if i % 40 == 0:
                    yield f"DB{10_000 + i:05d}", props  # SPOKE v3's DrugBank identifiers
                elif i % 40 == 1:
                    yield f"CHEMBL{i}", props
                else:
                    xrefs = [
                        f"drugbank:DB{10_000 + i:05d}",
                        f"chembl.compound:CHEMBL{i}",
                        f"pubchem.compound:{i}",
                    ]
                    yield f"inchikey:{inchikey(i)}", {**props, "xrefs": repr(xrefs) if i % 5 == 0 else xrefs}
            elif label == "Disease":
                extra = {"mesh_list": [f"MESH:D{100_000 + i:06d}"]} if i % 2 == 0 else {}
                if i % 6 == 0:
                    extra = {"mesh_list": repr(extra.get("mesh_list", []))}
                yield f"DOID:{i:07d}", {**props, **extra}
            elif label == "Anatomy":
                yield f"UBERON:{i:07d}", {**props, "mesh_id": f"D{200_000 + i:06d}"}
            elif label in ("BiologicalProcess", "MolecularFunction", "CellularComponent"):
                offset = {
                    "BiologicalProcess": 0,
                    "MolecularFunction": 3_000_000,
                    "CellularComponent": 6_000_000,
                }[label]
                yield f"GO:{offset + i:07d}", props
            elif label == "SideEffect":
                yield f"C{8_000_000 + i:07d}", props
            elif label == "Symptom":
                yield f"D{300_000 + i:06d}", props
            elif label == "PharmacologicClass":
                yield f"N{1_000_000_000 + i:010d}", props
            elif label == "CellType":
                yield f"CL:{i:07d}", props

    def write_files(self, folder: Path) -> dict[str, str]:
        """The cross-reference files, and the literature's concept keys (literature.txt)."""
        folder.mkdir(parents=True, exist_ok=True)
        rng = random.Random(self.seed)
        sizes = self.sizes
        cuis = iter(range(1_000_000, 7_000_000, 3))
        rows: list[tuple[str, str, str]] = []  # (cui, sab, code) of MRCONSO

        def code_row(sab: str, code: str) -> None:
            rows.append((f"C{next(cuis):07d}", sab, code))

        accessions = rng.sample(range(sizes["Protein"]), min(20_000, sizes["Protein"]))
        with open(folder / "NCIt-SwissProt_Mapping.txt", "w") as out:
            out.write("NCIt Code\tSwissProt ID\tNCIt Preferred Name\r\n")
            for n, i in enumerate(accessions):
                out.write(f"C{100_000 + n}\tA{i:07d}\tprotein {i}\r\n")
                code_row("NCI", f"C{100_000 + n}")
            for n in range(500):  # accessions SPOKE lacks
                out.write(f"C{900_000 + n}\tZ{n:07d}\tabsent {n}\r\n")
        with open(folder / "gene_info", "w") as out:
            out.write("#tax_id\tGeneID\tSymbol\tdbXrefs\n")
            for i in range(sizes["Gene"]):
                out.write(f"9606\t{1 + i * 3}\tG{i}\tHGNC:HGNC:{i}|Ensembl:ENSG{i}\n")
                code_row("HGNC", f"HGNC:{i}")
        with open(folder / "allXREFinDO.tsv", "w") as out:
            out.write("id\tlabel\txref\n")
            for i in range(sizes["Disease"]):
                out.write(f'"DOID:{i:07d}"\t"disease {i}"\t"MESH:D{100_000 + i:06d}"\n')
                if i % 3 == 0:
                    out.write(f'"DOID:{i:07d}"\t"disease {i}"\t"UMLS_CUI:C{7_000_000 + i:07d}"\n')
                code_row("MSH", f"D{100_000 + i:06d}")
        with open(folder / "src1src2.txt", "w") as out:
            out.write("From src:'1'\tTo src:'2'\n")
            for i in range(0, sizes["Compound"], 2):
                out.write(f"CHEMBL{i}\tDB{10_000 + i:05d}\n")
        with open(folder / "reference.tsv", "w") as ref, open(folder / "structure.tsv", "w") as struct:
            ref.write("UCI\tSRC_ID\tSRC_COMPOUND_ID\tASSIGNMENT\n")
            struct.write("UCI\tSTANDARDINCHI\tSTANDARDINCHIKEY\n")
            for i in range(sizes["Compound"]):  # UniChem links every DrugBank compound to its InChIKey
                ref.write(f"{i}\t2\tDB{10_000 + i:05d}\t1\n")
                struct.write(f"{i}\tInChI=1S/x{i}\t{inchikey(i)}\n")
        for i in range(sizes["Compound"]):
            code_row("DRUGBANK", f"DB{10_000 + i:05d}")
        with open(folder / "uberon.obo", "w") as out:
            out.write("format-version: 1.2\nontology: uberon\n\n")
            for i in range(sizes["Anatomy"]):
                out.write(
                    f"[Term]\nid: UBERON:{i:07d}\nname: part {i}\nxref: NCIT:C{500_000 + i}\nxref: FMA:{i}\n\n"
                )
                code_row("NCI", f"C{500_000 + i}")
                code_row("MSH", f"D{200_000 + i:06d}")
        for label, sab in (
            ("BiologicalProcess", "GO"),
            ("MolecularFunction", "GO"),
            ("CellularComponent", "GO"),
        ):
            for identifier, _ in self.nodes(label):
                code_row(sab, identifier)
        for identifier, _ in self.nodes("Symptom"):
            code_row("MSH", identifier)
        for identifier, _ in self.nodes("PharmacologicClass"):
            code_row("MED-RT", identifier)
        for taxon in range(10, 10 + 7 * 3 * sizes["Organism"], 7):  # UMLS knows more taxa than SPOKE
            code_row("NCBI", str(taxon))
        side_effects = [identifier for identifier, _ in self.nodes("SideEffect")]
        for i, cui in enumerate(side_effects):
            rows.append((cui, "MDR", str(10_000_000 + i)))
        while len(rows) < self.mrconso_rows:  # the rest of UMLS: vocabularies no route reads
            code_row(rng.choice(["SNOMEDCT_US", "LNC", "RXNORM", "ICD10CM"]), str(rng.randrange(10**8)))
        rows.sort()
        with open(folder / "MRCONSO.RRF", "w") as out:
            for n, (cui, sab, code) in enumerate(rows):
                out.write(
                    f"{cui}|ENG|P|L{n:08d}|PF|S{n:08d}|Y|A{n:09d}|||{code}|{sab}|PT|{code}|term {n}|0|N|256|\n"
                )
        literature = sorted({cui for cui, _, _ in rng.sample(rows, min(150_000, len(rows)))})
        literature += [f"GENE:{1 + i * 3}" for i in range(0, sizes["Gene"], 10)]
        (folder / "literature.txt").write_text("\n".join(literature) + "\n")
        return {"mrconso_rows": len(rows), "literature": len(literature), "ncit_accessions": len(accessions)}


def inchikey(i: int) -> str:
    letters = hashlib.sha256(str(i).encode()).hexdigest().upper()
    head = "".join(chr(ord("A") + int(c, 16) % 26) for c in letters[:14])
    return f"{head}-UHFFFAOYSA-N"


def load_world(driver, world: World, batch: int = 20_000) -> float:
    """The nodes, by plain Cypher (as SPOKE's own server holds them), constraints first."""
    started = time.perf_counter()
    with driver.session() as session:
        for label in world.sizes:
            session.run(
                f"CREATE CONSTRAINT bench_{label.lower()} IF NOT EXISTS FOR (n:{label}) REQUIRE n.identifier IS UNIQUE"
            ).consume()
        session.run("CALL db.awaitIndexes(300)").consume()
        for label in world.sizes:
            rows = []
            done = 0
            for identifier, props in world.nodes(label):
                rows.append({"id": identifier, "p": props})
                if len(rows) >= batch:
                    session.run(
                        f"UNWIND $rows AS row CREATE (n:{label} {{identifier: row.id}}) SET n += row.p",
                        rows=rows,
                    ).consume()
                    done += len(rows)
                    rows = []
            if rows:
                session.run(
                    f"UNWIND $rows AS row CREATE (n:{label} {{identifier: row.id}}) SET n += row.p", rows=rows
                ).consume()
                done += len(rows)
            print(f"  {label}: {done:,} nodes ({time.perf_counter() - started:.0f} s)", flush=True)
    return time.perf_counter() - started


# ------------------------------------------------------------------------------------- a variant


def child(variant: str, files: Path, uri: str, user: str, password: str) -> None:
    """One mapping in this process; prints its seconds, peak RSS and the table's digest as JSON."""
    import neo4j

    from pipeline.spoke.mapping.build import MappingSources, build_mapping, build_mapping_by_lookup
    from pipeline.spoke.mapping.nodes import Neo4jNodes, spoke_nodes_from_neo4j

    sources = MappingSources(
        mrconso=files / "MRCONSO.RRF", do_xrefs=files / "allXREFinDO.tsv", gene_info=files / "gene_info",
        ncit_swissprot=files / "NCIt-SwissProt_Mapping.txt", unichem=[files / "src1src2.txt"],
        unichem_structure=files / "structure.tsv", unichem_reference=files / "reference.tsv",
        uberon_obo=files / "uberon.obo",
    )  # fmt: skip
    literature = set((files / "literature.txt").read_text().split())
    with neo4j.GraphDatabase.driver(uri, auth=(user, password)) as driver:
        driver.verify_connectivity()
        started = time.perf_counter()
        if variant == "lookup":
            result = build_mapping_by_lookup(Neo4jNodes(driver), sources, literature_cuis=literature)
        else:
            result = build_mapping(spoke_nodes_from_neo4j(driver), sources, literature_cuis=literature)
        seconds = time.perf_counter() - started
        # The peak RSS of the mapping itself: read before the digest below, whose row lists are the
        # benchmark's own (ru_maxrss only grows).
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rows = sorted(zip(*(result.table.column(c).to_pylist() for c in result.table.column_names), strict=True))
    digest = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    lookup = result.stats.get("lookup", {})
    print(json.dumps({
        "variant": variant, "seconds": seconds, "peak_rss": peak, "rows": len(rows), "digest": digest,
        "round_trips": lookup.get("round_trips"), "asked": sum(lookup.get("asked", {}).values()) if lookup else None,
        "nodes_seen": sum(result.nodes.values()) if variant == "scan" else sum(result.stats["nodes_found"].values()),
    }))  # fmt: skip


def run_variant(variant: str, files: Path, uri: str, auth: tuple[str, str]) -> dict:
    env = {**os.environ, "BENCH_NEO4J_PASSWORD": auth[1]}
    command = [
        sys.executable,
        __file__,
        "--child",
        variant,
        "--files",
        str(files),
        "--uri",
        uri,
        "--user",
        auth[0],
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--proteins", type=int, default=1_000_000)
    parser.add_argument("--mrconso-rows", type=int, default=1_500_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--workdir", type=Path, default=ROOT / "data" / "bench" / "spoke-mapping")
    parser.add_argument("--page-cache", default="1g")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", choices=["lookup", "scan"], help=argparse.SUPPRESS)
    parser.add_argument("--files", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--uri", help=argparse.SUPPRESS)
    parser.add_argument("--user", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.files, args.uri, args.user, os.environ["BENCH_NEO4J_PASSWORD"])
        return

    import neo4j

    from services.local.servers import Neo4jServer

    world = World(args.proteins, args.mrconso_rows, args.seed)
    workdir = args.workdir / f"p{args.proteins}"
    files = workdir / "files"
    started = time.perf_counter()
    file_sizes = world.write_files(files)
    print(f"files: {file_sizes} in {time.perf_counter() - started:.0f} s ({files})", flush=True)

    os.environ.setdefault("LITPATH_NEO4J_JAVA_OPTS", "-Xmx2g -XX:+ExitOnOutOfMemoryError")
    java_opts = os.environ["LITPATH_NEO4J_JAVA_OPTS"]
    server = Neo4jServer(workdir / "neo4j", page_cache=args.page_cache)
    if server.running():
        server.stop()
    import shutil

    shutil.rmtree(workdir / "neo4j", ignore_errors=True)
    server = Neo4jServer(workdir / "neo4j", page_cache=args.page_cache)
    server.start(timeout=300)
    try:
        with neo4j.GraphDatabase.driver(server.uri, auth=server.auth) as driver:
            load_seconds = load_world(driver, world)
        print(f"loaded {sum(world.sizes.values()):,} nodes in {load_seconds:.0f} s", flush=True)
        runs: dict[str, list[dict]] = {"lookup": [], "scan": []}
        for i in range(args.repeat):
            for variant in ("lookup", "scan") if i % 2 == 0 else ("scan", "lookup"):
                result = run_variant(variant, files, server.uri, server.auth)
                runs[variant].append(result)
                print(f"  {variant}: {result['seconds']:.1f} s, peak RSS {result['peak_rss'] / 2**20:.0f} MiB, "
                      f"{result['rows']:,} rows", flush=True)  # fmt: skip
    finally:
        server.stop()

    digests = {r["digest"] for variant in runs.values() for r in variant}
    if len(digests) != 1:
        raise SystemExit(f"lookup and scan disagree: {runs}")
    from pipeline.runtime.progress import format_bytes

    median = {v: statistics.median(r["seconds"] for r in rs) for v, rs in runs.items()}
    peak = {v: statistics.median(r["peak_rss"] for r in rs) for v, rs in runs.items()}
    lookup, scan = runs["lookup"][0], runs["scan"][0]
    met = median["lookup"] <= TARGET_SECONDS and max(r["peak_rss"] for r in runs["lookup"]) <= TARGET_BYTES
    sizes = ", ".join(f"{label} {n:,}" for label, n in world.sizes.items())
    timed = {v: ", ".join(f"{r['seconds']:.1f}" for r in rs) for v, rs in runs.items()}
    lines = [
        f"## {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} -- {args.proteins:,} Protein nodes, "
        f"{sum(world.sizes.values()):,} nodes in all",
        "",
        f"CPU: {cpu_model()} ({os.cpu_count()} cores, shared; run under /tmp/litpath-heavy.lock), Python "
        f"{platform.python_version()}, neo4j driver {neo4j.__version__}; Neo4j 5.26 Community via "
        f"services.local.servers, page cache {args.page_cache}, JVM `{java_opts}`; nodes written by plain Cypher "
        f"in {load_seconds:.0f} s.",
        "",
        f"Nodes: {sizes}. Files: MRCONSO {file_sizes['mrconso_rows']:,} lines, NCIt-SwissProt "
        f"{file_sizes['ncit_accessions']:,} accessions, literature {file_sizes['literature']:,} concept keys. "
        f"Both give the same {lookup['rows']:,} mapping rows (sha256 {lookup['digest'][:12]}).",
        "",
        "| variant | runs (s) | median s | peak RSS (median) | SPOKE nodes read into Python | Neo4j round trips |",
        "|---|---|---|---|---|---|",
        f"| lookup (`build_mapping_by_lookup`) | {timed['lookup']} | "
        f"{median['lookup']:.1f} | {format_bytes(peak['lookup'])} | {lookup['nodes_seen']:,} "
        f"({lookup['asked']:,} identifiers asked) | {lookup['round_trips']:,} |",
        f"| scan (`spoke_nodes_from_neo4j`, before) | {timed['scan']} | "
        f"{median['scan']:.1f} | {format_bytes(peak['scan'])} | {scan['nodes_seen']:,} | 13 (one per label) |",
        "",
        f"Ratio scan / lookup: **{median['scan'] / median['lookup']:.1f}x** time, "
        f"**{peak['scan'] / peak['lookup']:.1f}x** memory. Target (lookup within {TARGET_SECONDS:.0f} s and "
        f"{format_bytes(TARGET_BYTES)}): **{'met' if met else 'NOT met'}**.",
        "",
    ]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    header = (
        ""
        if args.results.exists()
        else "# CUI mapping against a SPOKE-sized Neo4j (bench/spoke_mapping.py)\n\n"
    )
    with open(args.results, "a") as out:
        out.write(header + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
