# SPOKE in Neo4j and the UMLS CUI -> SPOKE mapping.


def mapping_sources():
    """The configured cross-reference files, as named inputs and as command-line options."""
    mapping = config["mapping"]
    files = {k: mapping[k] for k in ("do_xrefs", "gene_info", "ncit_swissprot") if mapping[k]}
    if mapping["umls_dir"]:
        files["umls_dir"] = mapping["umls_dir"]
    for i, path in enumerate(mapping["unichem"]):
        files[f"unichem_{i}"] = path
    return files


def mapping_options(wildcards, input):
    options = []
    for name, path in mapping_sources().items():
        flag = "--unichem" if name.startswith("unichem_") else "--" + name.replace("_", "-")
        options.append(f"{flag} {path}")
    if config["spoke"]["nodes"]:
        options.append(f"--spoke-nodes {config['spoke']['nodes']} --spoke-format {config['spoke']['format']}")
    return " ".join(options)


rule load_spoke:
    input:
        nodes=config["spoke"]["nodes"],
        edges=config["spoke"]["edges"],
    output:
        RESULTS / "spoke" / "load.json",
    log:
        LOGS / "spoke" / "load.log",
    params:
        metaedges=f"--metaedges {config['spoke']['metaedges']}" if config["spoke"]["metaedges"] else "",
    shell:
        "litpath load-spoke --nodes {input.nodes} --edges {input.edges} "
        "--format {config[spoke][format]} {params.metaedges} --report {output} > {log} 2>&1"


rule build_mapping:
    input:
        unpack(lambda wc: mapping_sources()),
        concepts=BUILD_DIR / "tables" / "counts.json",
        spoke=[RESULTS / "spoke" / "load.json"] if config["spoke"]["load"] else [],
    output:
        mapping=BUILD_DIR / "mapping" / "cui_spoke_mapping.parquet",
        coverage=report(
            BUILD_DIR / "mapping" / "coverage.md",
            category="SPOKE mapping",
            caption="../report/mapping_coverage.rst",
        ),
    log:
        LOGS / BUILD / "build_mapping.log",
    params:
        options=mapping_options,
    shell:
        "litpath build-mapping {params.options} "
        "--concepts $(dirname {input.concepts})/concepts.parquet "
        "--out $(dirname {output.mapping}) > {log} 2>&1"
