"""Where conversations come from: export files and live inboxes, read into summaries and conversations.

`model` holds the data a scan yields (summaries, partition keys, the parser version), `reader` reads
a pipeline's sources through the store's summary cache, `live` turns a live inbox's handed sessions
into conversations."""
