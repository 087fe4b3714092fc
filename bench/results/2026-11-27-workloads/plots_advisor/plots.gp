set terminal pngcairo size 900,600 noenhanced
set grid
set output 'bench/results/2026-11-27-workloads/plots_advisor/ttft_cdf_chat.png'
set title 'chat: TTFT CDF, store capacity 0.05 of working set'
set xlabel 'TTFT (ms)'
set ylabel 'fraction of requests'
set logscale x
set key bottom right
plot 'bench/results/2026-11-27-workloads/plots_advisor/ttft_chat_0.dat' using 1:2 with steps title 'none', \
  'bench/results/2026-11-27-workloads/plots_advisor/ttft_chat_1.dat' using 1:2 with steps title 'kvstash-nvme advisor off', \
  'bench/results/2026-11-27-workloads/plots_advisor/ttft_chat_2.dat' using 1:2 with steps title 'kvstash-nvme'
unset logscale x
set output 'bench/results/2026-11-27-workloads/plots_advisor/hit_ratio_chat.png'
set title 'chat: hit ratio (engine + store) vs store capacity'
set xlabel 'store capacity / working set'
set ylabel 'prompt tokens not recomputed'
set yrange [0:1]
set key bottom right
plot 'bench/results/2026-11-27-workloads/plots_advisor/hits_chat_0.dat' using 1:2 with linespoints title 'kvstash-nvme', \
  'bench/results/2026-11-27-workloads/plots_advisor/hits_chat_1.dat' using 1:2 with linespoints title 'kvstash-nvme advisor off', \
  0.361524 with lines dashtype 2 title 'none (engine cache)'
set autoscale y
