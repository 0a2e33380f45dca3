wrk.method = "HEAD"
