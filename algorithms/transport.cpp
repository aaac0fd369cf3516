// The reduction shared by every Transport (see transport.hpp).
#include "algorithms/transport.hpp"

#include <torch/utils.h>

#include <stdexcept>

namespace locosim {

bool Transport::push_pull(const std::vector<torch::Tensor>&, std::vector<torch::Tensor>&, const ServerExchange&) {
  throw std::logic_error("this transport has no parameter server (Transport::push_pull)");
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
