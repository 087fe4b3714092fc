set terminal pngcairo size 900,600 noenhanced
set grid
set output 'bench/results/2026-11-27-workloads/plots_policies/ttft_cdf_agents.png'
set title 'agents: TTFT CDF, store capacity 0.1 of working set'
set xlabel 'TTFT (ms)'
set ylabel 'fraction of requests'
set logscale x
set key bottom right
plot 'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_0.dat' using 1:2 with steps title 'none', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_1.dat' using 1:2 with steps title 'kvstash lru advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_2.dat' using 1:2 with steps title 'kvstash lru session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_3.dat' using 1:2 with steps title 'kvstash lru session+parent+ttl advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_4.dat' using 1:2 with steps title 'kvstash s3fifo advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_5.dat' using 1:2 with steps title 'kvstash s3fifo session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_6.dat' using 1:2 with steps title 'kvstash s3fifo session+parent+ttl advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_7.dat' using 1:2 with steps title 'kvstash tinylfu advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_8.dat' using 1:2 with steps title 'kvstash tinylfu session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_9.dat' using 1:2 with steps title 'kvstash tinylfu session+parent+ttl advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_10.dat' using 1:2 with steps title 'kvstash chain advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_11.dat' using 1:2 with steps title 'kvstash chain session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/ttft_agents_12.dat' using 1:2 with steps title 'kvstash chain session+parent+ttl advisor off'
unset logscale x
set output 'bench/results/2026-11-27-workloads/plots_policies/hit_ratio_agents.png'
set title 'agents: hit ratio (engine + store) vs store capacity'
set xlabel 'store capacity / working set'
set ylabel 'prompt tokens not recomputed'
set yrange [0:1]
set key bottom right
plot 'bench/results/2026-11-27-workloads/plots_policies/hits_agents_0.dat' using 1:2 with linespoints title 'kvstash chain advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_1.dat' using 1:2 with linespoints title 'kvstash chain session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_2.dat' using 1:2 with linespoints title 'kvstash chain session+parent+ttl advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_3.dat' using 1:2 with linespoints title 'kvstash lru advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_4.dat' using 1:2 with linespoints title 'kvstash lru session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_5.dat' using 1:2 with linespoints title 'kvstash lru session+parent+ttl advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_6.dat' using 1:2 with linespoints title 'kvstash s3fifo advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_7.dat' using 1:2 with linespoints title 'kvstash s3fifo session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_8.dat' using 1:2 with linespoints title 'kvstash s3fifo session+parent+ttl advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_9.dat' using 1:2 with linespoints title 'kvstash tinylfu advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_10.dat' using 1:2 with linespoints title 'kvstash tinylfu session+parent advisor off', \
  'bench/results/2026-11-27-workloads/plots_policies/hits_agents_11.dat' using 1:2 with linespoints title 'kvstash tinylfu session+parent+ttl advisor off', \
  0.469007 with lines dashtype 2 title 'none (engine cache)'
set autoscale y
