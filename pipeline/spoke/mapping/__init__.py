"""The CUI <-> SPOKE mapping, built the way the seed paper describes (SC22, appendix E).

Three methods, every route recorded in ``source``:

* **identity** -- SPOKE nodes whose identifiers are CUIs (``SideEffect``).
* **direct** -- SPOKE identifiers (or node properties) in a vocabulary that UMLS holds, looked
  up in MRCONSO: MeSH (``Symptom`` ids, ``Disease.mesh_list``, ``Anatomy.mesh_id``), GO
  (``BiologicalProcess``/``MolecularFunction``/``CellularComponent``), NCBI Taxonomy
  (``Organism``), DrugBank (``Compound``), NDF-RT/MED-RT/MeSH (``PharmacologicClass``).
* **indirect** -- cross-references to such a vocabulary first: Disease Ontology xrefs
  (``UMLS_CUI:`` straight to a CUI; ``MESH:``/``NCI:`` through MRCONSO), NCBI ``gene_info``
  (Entrez GeneID -> ``HGNC:`` in dbXrefs -> MRCONSO SAB=HGNC), NCIt-SwissProt (UniProt ->
  NCIt code -> MRCONSO SAB=NCI), UniChem (ChEMBL -> DrugBank -> MRCONSO SAB=DRUGBANK, from a
  ``src1src2`` whole-source mapping, or ChEMBL -> RxNorm -> MRCONSO SAB=RXNORM, from a
  ``src1src47`` one; and InChIKey -> DrugBank, from UniChem's STRUCTURE and
  REFERENCE table dumps, for Compound nodes identified by an InChIKey or carrying one in an
  ``inchikey`` property), the UBERON and Cell Ontology release files (``uberon.obo``,
  ``cl.obo``: the cross-references the Ontology Lookup Service serves, read from the files
  themselves) for Anatomy and CellType nodes (``UMLS:`` straight to a CUI; ``NCIT:``/``FMA:``
  through MRCONSO), and retired CUIs carried through MRCUI (both ways: a retired CUI in
  the literature reaches the nodes of its successor, and a node keyed by a retired CUI is
  reached from the successor).

One CUI may map to several nodes and one node to several CUIs; all rows are kept, one per
(cui, node, method, source). MRCONSO rows count only when LAT=ENG and not suppressed
(SUPPRESS O, E or Y).

The modules, each imported by name (this package re-exports nothing):

* :mod:`.rules` -- ``SpokeNode``, the methods, the direct vocabulary rules and the route tables;
* :mod:`.nodes` -- the SPOKE nodes, from a dump or from Neo4j;
* :mod:`.xrefs` -- the readers of the cross-reference files, each counting what it read in a
  ``FileStats``;
* :mod:`.routes` -- one class per route: what it needs of the nodes, the files it reads, the
  rows and MRCONSO lookups it adds;
* :mod:`.build` -- ``MappingSources``, ``build_mapping`` (a loop over the routes, then MRCONSO
  and MRCUI) and ``write_mapping``.
"""
