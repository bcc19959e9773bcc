# SPDX-License-Identifier: GPL-3.0-or-later
"""PET sinograms as numpy arrays with their geometry (docs/python.md, "PET sinograms").

A Sinogram holds STIR's cylindrical projection data (pet/data/tl-sinogram.h): segments (ranges
of ring differences), each with its own number of axial positions; views (angles over
[0, pi)); tangential positions. The bins are one float32 array, ``data``, in STIR's
SegmentViewAxialTangPos order (what a ``.s`` file holds): segment after segment, within one
``[view][axial][tangential]``. Since segments differ in their axial counts, the shaped access
is per segment -- ``s.segment(i)`` is a numpy view ``(views, axial, tangential)`` of ``data``
-- or all sinograms stacked as SIRF's ``AcquisitionData.as_array()`` stacks them:
``s.as_array()`` is ``(sinograms, views, tangential)``, segment after segment (a copy).

The geometry is the header's: rings, detectors per ring, radius, depth of interaction, ring
spacing, bin size, view offset, the segments' ring differences, hence span and view mashing;
``s.scanner`` is the cylindrical scanner as a crystal table. ``s.operator(grid)`` is the PET
projector from an image on ``grid`` into this sinogram's bins (a tomolab.LinearOperator: the
algebra, ``.T``, ``aslinearoperator()``), the sum over each bin's crystal pairs of the line
integrals between their crystal centres; a Sinogram is accepted wherever an array of its bins
is (``A.T @ s``), and ``s.like(values)`` gives values of the operator's data side its shape."""
import numpy as np

from . import _tomolab

_GEOMETRY = ('segments', 'n_views', 'n_tangential', 'n_rings', 'n_detectors', 'inner_radius_mm',
             'doi_mm', 'ring_spacing_mm', 'bin_size_mm', 'view_offset_deg', 'arc_corrected',
             'name', 'block_positions')


class Sinogram:
    """PET projection data with their geometry (module docstring)."""

    def __init__(self, data, *, segments, n_views, n_tangential, n_rings, n_detectors,
                 inner_radius_mm, ring_spacing_mm, doi_mm=0.0, bin_size_mm=0.0,
                 view_offset_deg=0.0, arc_corrected=False, name='', scanner_text=None,
                 block_positions=0):
        self.segments = tuple((int(lo), int(hi), int(n)) for lo, hi, n in segments)
        self.n_views, self.n_tangential = int(n_views), int(n_tangential)
        self.n_rings, self.n_detectors = int(n_rings), int(n_detectors)
        self.inner_radius_mm, self.doi_mm = float(inner_radius_mm), float(doi_mm)
        self.ring_spacing_mm, self.bin_size_mm = float(ring_spacing_mm), float(bin_size_mm)
        self.view_offset_deg, self.arc_corrected = float(view_offset_deg), bool(arc_corrected)
        self.name = str(name)
        # detector positions per block, the first a gap (the mMR's 9; 0 = none: tl-sinogram.h)
        self.block_positions = int(block_positions)
        n = self.n_bins
        d = np.zeros(n, np.float32) if data is None else \
            np.ascontiguousarray(np.asarray(data, dtype=np.float32)).reshape(-1)
        if d.size != n:
            raise ValueError(f"data: {d.size} values; the geometry holds {n} bins")
        self.data = d
        self._scanner_text, self._pairs, self._offsets = scanner_text, None, None

    # ---- made from files and list mode ----
    @classmethod
    def _from_dict(cls, d):
        data = d.pop('data')
        return cls(data, **d)

    @classmethod
    def load(cls, path):
        """STIR Interfile projection data (.hs and its data file)."""
        return cls._from_dict(_tomolab._sinogram_load(str(path)))

    @classmethod
    def from_listmode(cls, listmode, max_ring_difference=None, return_outside=False):
        """The events of a tomolab.Listmode (a ring scanner with an even number of crystals per
        ring) histogrammed into span 1 without view mashing: N/2 views, N tangential positions,
        one segment per ring difference up to max_ring_difference (None: the scanner's
        acceptance); TOF bins summed. return_outside: also the number of events no bin holds."""
        ev = listmode.events
        pairs = np.stack([ev['a'], ev['b']], axis=1)
        rd = -1 if max_ring_difference is None else int(max_ring_difference)
        if rd < -1:
            raise ValueError(f"max_ring_difference {max_ring_difference}: expected >= 0 or None")
        d, outside = _tomolab._sinogram_histogram(listmode.scanner.to_text(), pairs, rd)
        s = cls._from_dict(d)
        return (s, outside) if return_outside else s

    def save(self, path):
        """STIR Interfile projection data: the header `path` (.hs) and its float32 .s file."""
        _tomolab._sinogram_save(self, str(path))

    def like(self, values=None):
        """A Sinogram of this geometry holding `values` (the bins in data order, e.g. what
        this sinogram's operator returns; None: zeros)."""
        s = Sinogram(values, **{k: getattr(self, k) for k in _GEOMETRY},
                     scanner_text=self._scanner_text)
        s._pairs = self._pairs
        return s

    def copy(self):
        return self.like(self.data.copy())

    # ---- geometry ----
    @property
    def n_segments(self):
        return len(self.segments)

    @property
    def n_bins(self):
        return self.n_views * self.n_tangential * sum(n for _, _, n in self.segments)

    @property
    def n_sinograms(self):
        """Axial positions over all segments: the first axis of as_array()."""
        return sum(n for _, _, n in self.segments)

    @property
    def span(self):
        """Ring differences per segment around 0 (STIR's span: 1, 3, 5, ...)."""
        for lo, hi, _ in self.segments:
            if lo <= 0 <= hi:
                return hi - lo + 1
        return 1

    @property
    def view_mashing(self):
        return (self.n_detectors // 2) // self.n_views

    @property
    def shape(self):
        """The shape of as_array(): (sinograms, views, tangential)."""
        return (self.n_sinograms, self.n_views, self.n_tangential)

    @property
    def tangential_positions(self):
        """The tangential index of each column: -(n // 2) .. n - 1 - n // 2 (STIR's)."""
        return np.arange(self.n_tangential) - self.n_tangential // 2

    @property
    def scanner(self):
        """The cylindrical scanner of this geometry as a tomolab.Scanner (crystal r * N + d)."""
        if self._scanner_text is None:
            self._scanner_text = _tomolab._sinogram_scanner_text(self)
        return _tomolab.Scanner.from_text(self._scanner_text)

    def segment_index(self, ring_difference):
        """The index of the segment holding ring_difference (ValueError if none)."""
        for i, (lo, hi, _) in enumerate(self.segments):
            if lo <= ring_difference <= hi:
                return i
        raise ValueError(f"ring difference {ring_difference}: no segment holds it (segments "
                         f"{[(lo, hi) for lo, hi, _ in self.segments]})")

    def segment(self, i):
        """Segment i (file order) as a numpy view (views, axial, tangential) of data."""
        if not 0 <= i < self.n_segments:
            raise IndexError(f"segment {i}: the sinogram has {self.n_segments} (0 .. "
                             f"{self.n_segments - 1})")
        if self._offsets is None:
            sizes = [n * self.n_views * self.n_tangential for _, _, n in self.segments]
            self._offsets = np.concatenate([[0], np.cumsum(sizes)])
        a, b = self._offsets[i], self._offsets[i + 1]
        return self.data[a:b].reshape(self.n_views, self.segments[i][2], self.n_tangential)

    def as_array(self):
        """All sinograms stacked (sinograms, views, tangential), segment after segment (SIRF's
        order); a copy."""
        return np.concatenate([self.segment(i).transpose(1, 0, 2)
                               for i in range(self.n_segments)], axis=0)

    @classmethod
    def from_array(cls, like, array):
        """The inverse of as_array: a (sinograms, views, tangential) array into `like`'s
        geometry."""
        a = np.asarray(array, np.float32)
        if a.shape != like.shape:
            raise ValueError(f"array of shape {a.shape}; the sinogram's is {like.shape}")
        parts, k = [], 0
        for _, _, n in like.segments:
            parts.append(a[k:k + n].transpose(1, 0, 2).reshape(-1))
            k += n
        return like.like(np.concatenate(parts))

    def __array__(self, dtype=None, copy=None):
        return self.data if dtype is None else self.data.astype(dtype)

    def __repr__(self):
        return (f"<tomolab.Sinogram '{self.name}': {self.n_segments} segments (span "
                f"{self.span}), {self.n_views} views (mashing {self.view_mashing}), "
                f"{self.n_tangential} tangential positions, {self.n_bins} bins>")

    # ---- the projector ----
    def crystal_pairs(self):
        """(pairs, per_bin): every bin's crystal pairs (n, 2) uint32 in bin order and the
        number of pairs of each bin (n_bins,), from the library's binning rule (arc-corrected
        data have no crystal pairs and are refused)."""
        if self._pairs is None:
            self._pairs = _tomolab._sinogram_pairs(self)
        return self._pairs

    def operator(self, grid, projector='siddon', scanner=None, ctx=None):
        """The projector from images on `grid` into this geometry's bins: a bin is the sum of
        its crystal pairs' lines (tomolab.line_operator between the crystal centres), so the
        adjoint spreads each bin over its pairs; projector: 'siddon' (tl_sinogram_forward's)
        or 'joseph'. scanner: the crystal table the lines join (default self.scanner, the
        cylinder of the header's geometry); for a sinogram histogrammed from list mode, that
        list mode's scanner projects along its real crystals (the same crystal ids). A tomolab.LinearOperator whose data side is
        the bins in data order (wrap results with like())."""
        from .linop import _Product, _wrap, csr_operator, lor_end_points
        pairs, per_bin = self.crystal_pairs()
        # a pair of one crystal with itself (ring difference 0, t = -N/2: STIR's bin of two
        # equal detector indices) is no line: left out, its bin sums the others
        keep = pairs[:, 0] != pairs[:, 1]
        if not keep.any():
            raise ValueError("the sinogram's bins hold no crystal pairs")
        bin_of_pair = np.repeat(np.arange(self.n_bins), per_bin)[keep]
        pairs = pairs[keep]
        sc = self.scanner if scanner is None else scanner
        if sc.n_crystals != self.n_rings * self.n_detectors:
            raise ValueError(f"scanner '{sc.name}' has {sc.n_crystals} crystals; the sinogram's "
                             f"geometry has {self.n_rings} x {self.n_detectors}")
        start, end = lor_end_points(sc, pairs)
        lines = _tomolab.line_operator(start, end, grid, projector=projector, ctx=ctx)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(bin_of_pair, minlength=self.n_bins))])
        binning = csr_operator((indptr, np.arange(len(pairs)), np.ones(len(pairs), np.float32),
                                len(pairs)), subsets=1, ctx=ctx)
        return _Product(_wrap(binning), _wrap(lines))
