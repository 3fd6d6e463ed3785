# Hadoop: the flow sizes of a Hadoop cluster in Facebook's datacenters, from A. Roy, H. Zeng,
# J. Bagga, G. Porter and A. C. Snoeren, "Inside the Social Network's (Datacenter) Network",
# SIGCOMM 2015: the flow size distribution of its Hadoop cluster. The points are those read off
# that figure for HPCC (Y. Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019) and
# used since in datacenter transport studies, in bytes. Mostly small flows: 70 % are at most
# 7 KB; mean 0.12 MB.
#
# Format (docs/workloads.md, "Size files"): per line a flow size in bytes and the fraction of
# flows of at most that size; sizes spread uniformly between two points; the first point's
# fraction is the share of flows of exactly its size (here 1 % of flows are 100 B).
#
# bytes    fraction
100        0.01
200        0.02
300        0.05
350        0.15
400        0.20
500        0.30
600        0.40
700        0.50
1000       0.60
2000       0.67
7000       0.70
30000      0.72
50000      0.82
80000      0.87
120000     0.90
300000     0.95
1000000    0.975
2000000    0.99
10000000   1
