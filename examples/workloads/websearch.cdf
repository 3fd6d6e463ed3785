# Web search: the flow sizes of the background traffic in a production web-search cluster,
# from M. Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Figure 4 (flow size
# distribution of background flows). The points are those read off that figure for pFabric
# (M. Alizadeh et al., "pFabric: Minimal Near-Optimal Datacenter Transport", SIGCOMM 2013) and
# used since by HPCC (Y. Li et al., SIGCOMM 2019) and most datacenter transport studies, in bytes.
# Mean 1.71 MB; 53 % of flows are at most 80 KB, and the 10 % above 5 MB carry most of the bytes.
#
# Format (docs/workloads.md, "Size files"): per line a flow size in bytes and the fraction of
# flows of at most that size; sizes spread uniformly between two points; the first point's
# fraction is the share of flows of exactly its size (here 15 % of flows are 10 KB).
#
# bytes    fraction
10000      0.15
20000      0.20
30000      0.30
50000      0.40
80000      0.53
200000     0.60
1000000    0.70
2000000    0.80
5000000    0.90
10000000   0.97
30000000   1
