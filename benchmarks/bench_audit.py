"""What ``tgeval.audit`` costs: the whole audit of a model on UCI against one all-entity evaluation of the same
test segment, in the same process (the ratio is the figure; both at ``--threads``), and each check's seconds.

    python benchmarks/bench_audit.py --threads 1 --out benchmarks/results/bench_audit.json

The models: EdgeBank and local recency (heuristics) and TGN (PyG recipe widths, untrained: the audit's cost does
not depend on the weights); each row says whether the audit passed.
"""

import argparse
import warnings

from _common import (add_run_args, apply_common_args, load_setting, print_header, print_table, save_results,
                     timed)

import tgeval
from tgeval.core.choices import AUDIT_CHECKS
from tgeval.errors import UntrainedModelWarning
from tgeval.models import registry

MODELS = ("edgebank", "recency-local", "tgn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_args(parser)
    args = parser.parse_args()
    apply_common_args(args)
    warnings.simplefilter("ignore", UntrainedModelWarning)
    data, how, split, catalog, num_nodes = load_setting("uci", args.data_dir)
    print_header(f"the audit's cost on UCI ({how}), {args.threads} thread(s)")
    rows = []
    for name in MODELS:
        def build(stream, name=name):
            options = {} if registry.entry(name).kind == "heuristic" else {"msg_dim": 1}
            return registry.build(name, num_nodes=num_nodes, **options)

        evaluation, _ = timed(lambda: tgeval.evaluate(build(data), data, split.test,
                                                      tgeval.Protocol(num_negatives=0), catalog=catalog))
        seconds, report = timed(lambda: tgeval.audit(build, data, split, catalog=catalog))
        rows.append([name, "passed" if report.passed else "FAILED", f"{seconds:.1f}", f"{evaluation:.1f}",
                     f"{seconds / evaluation:.1f}x",
                     *(f"{report.checks[check].seconds:.1f}" for check in AUDIT_CHECKS)])
    print_table(["model", "audit", "audit s", "one evaluation s", "ratio", *(f"{c} s" for c in AUDIT_CHECKS)], rows,
                title=f"tgeval.audit against one all-entity evaluation of UCI's test segment (catalog train, "
                      f"batches of 200), {args.threads} thread(s)")
    save_results(args)


if __name__ == "__main__":
    main()
