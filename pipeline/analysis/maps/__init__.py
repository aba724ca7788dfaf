"""Maps of a store's variables over two grid axes, one panel per value of the others.

- :mod:`.plot`: :func:`~.plot.plot`, what ``rmtsweep.plot``, ``ds.rmt.plot`` and ``rmtsweep plot`` return, and
  the data and figure behind a map;
- :mod:`.style`: the colour scale each quantity gets; :mod:`.axes`: linear or log axes and the cells' edges;
- :mod:`.interactive`: the HTML files (holoviews and bokeh, inline); :mod:`.static`: the PNG / SVG / PDF pages
  (matplotlib), laid out by :mod:`.pages`, their titles fitted by :mod:`.text`;
- :mod:`.output`: where the files go and in which formats.
"""

__all__: list[str] = []     # reached through its modules; rmtsweep.plot is the public entry
