"""Measured allreduce times beside flowemu's prediction for the same
algorithm, ranks and sizes (``flowemu fit --compare``): how far the model is
from a machine, per size.

The measurements are those :func:`flowemu.fit` reads (CSV ``algorithm,
ranks, size, time`` or nccl-tests ``all_reduce_perf`` output). Each
(algorithm, ranks) is timed by :func:`flowemu.simulate` at the measured
sizes, on one switch of that many hosts (``tree:P``, the setting of GenModel
and of the fit) unless a topology is given, with the network the fit found
or one given (a :class:`~flowemu.core.network.Network`, a preset name or a
preset file).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..api import simulation
from ..core.errors import ConfigError
from ..core.network import Network
from ..core.presets import load_preset
from ..core.units import format_size, format_time
from ..models.measurements import read_measurements
from ..topology import checks as topology_checks
from .figures.fit import plot_fit
from .fit import fit

__all__ = ["MeasuredComparison", "compare_measured"]


@dataclass
class MeasuredComparison:
    """What :func:`compare_measured` found.

    Attributes
    ----------
    rows : pandas.DataFrame
        One row per measurement: ``source, line, algorithm, ranks, size``
        (bytes), ``time`` (measured, s), ``topology``, ``predicted`` (s) and
        ``error`` (predicted/measured − 1).
    network : Network
        The network the prediction ran on.
    network_source : str
        Where it came from (``fitted to the measurements``, a preset name).
    model : str
        ``flow`` or ``genmodel``.
    """

    rows: pd.DataFrame
    network: Network
    network_source: str
    model: str

    def text(self) -> str:
        """The table ``flowemu fit --compare`` prints."""
        net = self.network
        err = self.rows["error"].to_numpy()
        head = (f"measured against flowemu ({self.model} model; network {self.network_source}: "
                f"alpha {format_time(net.alpha)}, bandwidth {net.bandwidth * 8 / 1e9:.4g}Gb/s, "
                f"link latency {format_time(net.link_latency)}, hop latency "
                f"{format_time(net.hop_latency)}): rms relative error "
                f"{np.sqrt(np.mean(err ** 2)):.3%}, largest {np.max(np.abs(err)):.3%}")
        show = pd.DataFrame({
            "algorithm": self.rows["algorithm"], "ranks": self.rows["ranks"],
            "topology": self.rows["topology"],
            "size": self.rows["size"].map(format_size),
            "measured": self.rows["time"].map(format_time),
            "predicted": self.rows["predicted"].map(format_time),
            "error": self.rows["error"].map(lambda r: f"{r:+.2%}")})
        return head + "\nerror = predicted/measured − 1\n" + show.to_string(index=False)

    def plot(self, path):
        """Measured times (markers) and flowemu's prediction (lines) against
        size, one panel per algorithm, a colour per rank count."""
        rows = self.rows.assign(fit=self.rows["predicted"])
        return plot_fit(rows, path, what=f"flowemu's prediction ({self.model} model)")


def compare_measured(data, *, network=None, topology=None, model: str = "flow",
                     algorithm: str | None = None, ranks: int | None = None,
                     bandwidth=None) -> MeasuredComparison:
    """Measured allreduce times beside flowemu's prediction for the same sizes.

    Parameters
    ----------
    data : path, list of paths, or pandas.DataFrame
        Measurements as for :func:`flowemu.fit`.
    network : Network, str or Path, optional
        The network to predict with: a Network, a preset name or a preset
        file. Default: the network :func:`flowemu.fit` finds in ``data``
        (``bandwidth`` is passed to it).
    topology : str or Topology, optional
        Where every measured configuration runs (it needs as many endpoints
        as the most ranks measured). Default: ``tree:P``, one switch of the
        configuration's P ranks.
    model : {"flow", "genmodel"}
        flowemu's flow engine (default) or its GenModel backend.
    algorithm, ranks
        As for :func:`flowemu.fit` (nccl-tests output only).

    Returns
    -------
    MeasuredComparison
    """
    meas = read_measurements(data, algorithm=algorithm, ranks=ranks)
    if network is None:
        net = fit(data, bandwidth=bandwidth, algorithm=algorithm, ranks=ranks).network()
        source = "fitted to the measurements"
    elif bandwidth is not None:
        raise ConfigError("bandwidth: applies to the fit; with a network given there is none "
                          "(set the bandwidth in the network)")
    elif isinstance(network, Network):
        net, source = network, "given"
    else:
        preset = load_preset(network)
        net, source = preset.network(), str(preset.name)
    predicted = np.empty(len(meas))
    where = np.empty(len(meas), dtype=object)
    if topology is not None:   # (the measured ranks, not a --ranks given: said as such)
        topo_built = topology_checks.topology(topology)
        big = meas[meas["ranks"] > topo_built.num_endpoints]
        if len(big):
            first = big.iloc[0]
            raise ConfigError(f"topology: {topo_built.spec} has {topo_built.num_endpoints} "
                              f"endpoints; the measurements have {int(first['ranks'])} ranks "
                              f"({first['source']}, line {int(first['line'])}); give a "
                              "topology that holds them (default tree:P)")
        topology = topo_built
    for (alg, p), part in meas.groupby(["algorithm", "ranks"], sort=False):
        topo = topology if topology is not None else f"tree:{int(p)}"
        sizes = sorted({int(s) for s in part["size"]})
        df = simulation.simulate(topo, alg, sizes, ranks=int(p), network=net, model=model)
        by_size = dict(zip(df["size_bytes"].astype(int), df["time_s"], strict=True))
        predicted[part.index] = [by_size[int(s)] for s in part["size"]]
        where[part.index] = df["topology"].iloc[0]
    rows = meas.assign(topology=where, predicted=predicted,
                       error=predicted / meas["time"].to_numpy() - 1.0)
    return MeasuredComparison(rows, net, source, model)
