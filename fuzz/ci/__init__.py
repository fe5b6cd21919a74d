"""What SGLang's CI needs beside the campaigns: a baseline of known findings (``baseline``), the files to watch
(``paths``)."""
