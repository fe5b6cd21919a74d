"""``fidelity`` and ``matrix``: the model against real SGLang sizing code, release by release.

    differential   the fidelity engine: the configuration pool, model vs real sizing per function
    replay         the replay of its case files
    writepath      the model's decode write path vs SGLang's, step by step, per kind of pool
    page_tables    the model's twin of FA3's page-table builders vs SGLang's, build by build
    matrix         the matrix engine: release ranges, each release's campaign and fidelity, reference check, --expect
    matrix_report  the matrix as written: the markdown table, the report's target entries, matrix.md and matrix.json
    cli            both commands: options, running the engines, printing, case files and exit status

Imports go one way: cli -> matrix_report -> matrix -> differential -> writepath, page_tables; replay -> differential.
"""
