// The reduction shared by every Transport (see transport.hpp).
#include "algorithms/transport.hpp"

#include <torch/utils.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace locosim {

bool Transport::push_pull(const std::vector<torch::Tensor>&, std::vector<torch::Tensor>&, const ServerExchange&) {
  throw std::logic_error("this transport has no parameter server (Transport::push_pull)");
}

Pending Transport::all_reduce_mean_among(const std::vector<int>&, std::vector<torch::Tensor>&, Wire) {
  throw std::logic_error("this transport has no subgroup collectives (Transport::all_reduce_mean_among)");
}

Pending Transport::all_gather_among(const std::vector<int>&, const std::vector<torch::Tensor>&, double,
                                    std::vector<std::vector<torch::Tensor>>&) {
  throw std::logic_error("this transport has no subgroup collectives (Transport::all_gather_among)");
}

Pending Transport::exchange(int peer, const std::vector<torch::Tensor>& mine, double bytes,
                            std::vector<std::vector<torch::Tensor>>& out) {
  const int self = rank();
  std::vector<int> pair = {std::min(self, peer), std::max(self, peer)};
  if (peer == self) pair.pop_back();
  return all_gather_among(pair, mine, bytes, out);
}

void check_group(const std::vector<int>& group, int rank, int world_size) {
  auto names = [&] {
    std::string s;
    for (int r : group) s += (s.empty() ? "" : ", ") + std::to_string(r);
    return "rank " + std::to_string(rank) + " named the group {" + s + "}: ";
  };
  if (group.empty()) throw std::logic_error(names() + "a subgroup has at least its caller");
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] < 0 || group[i] >= world_size) {
      throw std::logic_error(names() + "rank " + std::to_string(group[i]) + " is not in a world of " +
                             std::to_string(world_size));
    }
    if (i > 0 && group[i] <= group[i - 1]) throw std::logic_error(names() + "ranks must be in rank order, without repeats");
  }
  if (!std::binary_search(group.begin(), group.end(), rank)) throw std::logic_error(names() + "it is not among them");
}

void ServerWindow::add(int rank, std::vector<torch::Tensor> up) { pushes_[rank] = std::move(up); }

std::vector<int> ServerWindow::close(ParameterServer& server, double now_s) {
  std::vector<int> ranks;
  for (const auto& [rank, up] : pushes_) {
    server.apply(rank, up, now_s);
    ranks.push_back(rank);
  }
  for (int rank : ranks) replies_[rank] = server.reply(rank);
  if (server.done()) stopped_.insert(ranks.begin(), ranks.end());
  pushes_.clear();
  ++closed_;
  return ranks;
}

std::vector<torch::Tensor> ServerWindow::take_reply(int rank) {
  auto it = replies_.find(rank);
  std::vector<torch::Tensor> reply = std::move(it->second);
  replies_.erase(it);
  return reply;
}

bool commit_or_redo(const std::function<Pending()>& attempt, int max_attempts) {
  for (int i = 0; i < max_attempts; ++i) {
    if (attempt().wait()) return true;
  }
  return false;
}

std::vector<torch::Tensor> mean_in_rank_order(const std::vector<std::vector<torch::Tensor>>& contributions,
                                              WireFormat format) {
  torch::NoGradGuard no_grad;  // scoped: never held across a simulator context switch
  std::vector<const std::vector<torch::Tensor>*> members;
  for (const auto& c : contributions) {
    if (!c.empty()) members.push_back(&c);
  }
  const std::vector<torch::Tensor>& first = *members.at(0);
  std::vector<torch::Tensor> out;
  for (size_t i = 0; i < first.size(); ++i) {
    torch::Tensor sum = first[i].to(torch::kFloat32, false, /*copy=*/true);
    for (size_t r = 1; r < members.size(); ++r) sum.add_((*members[r])[i]);
    sum.div_(static_cast<double>(members.size()));
    out.push_back(through_wire(sum, format).to(first[i].scalar_type()));
  }
  return out;
}

std::vector<std::vector<torch::Tensor>> gathered_copy(const std::vector<std::vector<torch::Tensor>>& contributions) {
  std::vector<std::vector<torch::Tensor>> out(contributions.size());
  for (size_t r = 0; r < contributions.size(); ++r) {
    for (const auto& x : contributions[r]) out[r].push_back(x.clone());
  }
  return out;
}

double wire_bytes(const std::vector<torch::Tensor>& xs, WireFormat format) {
  double total = 0;
  for (const auto& x : xs) total += wire_bytes(format, x.numel());
  return total;
}

}  // namespace locosim
